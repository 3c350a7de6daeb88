// SPDX-License-Identifier: GPL-2.0-or-later
// System memory as the GPU reaches it by DMA (docs/spec/vgpu.md §4.5): a
// bus address space that whoever hosts the GPU supplies. The MMU turns a
// sysmem PTE into a bus address and the engines read and write ranges of
// it in bulk. The host decides what a bus address is: the testbed's
// machine RAM (a memfd), a map of windows onto each VM's RAM (the
// mediator's host bus), or QEMU's DMA API (hw/vgpu, through the C API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/error.h"

namespace vgpu::gpu {

// Host memory that a DMA engine other than the CPU reaches: a device back
// end registers (pins) it once, so that its transfers are DMA straight to
// and from it (docs/cuda.md, "System memory"). Calls are counted per base:
// memory registered twice (two bus windows onto one RAM) is unregistered
// by the second unregister.
class DmaRegistrar {
 public:
  virtual ~DmaRegistrar() = default;
  virtual void register_host(std::byte* base, uint64_t bytes) = 0;
  virtual void unregister_host(std::byte* base) = 0;
};

// Bus ranges as host memory, for one transfer: while the hold lives, what
// span() returned stays mapped and registered (removing a bus window, or
// detaching a registrar, waits for it). Held by one thread.
class DmaHold {
 public:
  virtual ~DmaHold() = default;
  // The host bytes of [bus, bus + len), or nullptr when the range is not
  // (all) host memory this hold reaches; then read()/write() decide.
  virtual std::byte* span(uint64_t bus, uint64_t len) = 0;
};

class SystemMemory {
 public:
  virtual ~SystemMemory() = default;
  // Whether every byte of [bus, bus + len) is memory (len 0: true).
  [[nodiscard]] virtual bool contains(uint64_t bus, uint64_t len) const = 0;
  // One DMA transfer of a whole range: false (and nothing, or for a read
  // part of dst, transferred) when any byte of the range is not memory.
  [[nodiscard]] virtual bool read(uint64_t bus, void* dst, uint64_t len) = 0;
  [[nodiscard]] virtual bool write(uint64_t bus, const void* src, uint64_t len) = 0;

  // Direct device DMA (a device back end; docs/cuda.md). A hold on the
  // memory's host spans, or nullptr where it has none (QEMU's DMA API):
  // then the engines use read()/write(). The registrar is told of every
  // host mapping that a hold may return, now and as they come and go,
  // until it detaches; detaching waits for holds in progress.
  [[nodiscard]] virtual std::unique_ptr<DmaHold> hold_host() { return nullptr; }
  virtual void attach(DmaRegistrar&) {}
  virtual void detach(DmaRegistrar&) {}
};

// The default: a GPU with no system memory; every DMA fails.
class NoSystemMemory final : public SystemMemory {
 public:
  bool contains(uint64_t, uint64_t len) const override { return len == 0; }
  bool read(uint64_t, void*, uint64_t len) override { return len == 0; }
  bool write(uint64_t, const void*, uint64_t len) override { return len == 0; }
};

// RAM backed by a memfd, bus addresses [0, size): a testbed VM's guest RAM
// (or the native testbed's machine RAM). The fd lets another process map
// the same pages (the daemon, later).
class MemfdRam final : public SystemMemory {
 public:
  // bytes: non-zero, a multiple of 4 KiB.
  static Result<std::shared_ptr<MemfdRam>> create(uint64_t bytes, const std::string& name);
  ~MemfdRam() override;
  MemfdRam(const MemfdRam&) = delete;
  MemfdRam& operator=(const MemfdRam&) = delete;

  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  std::byte* data() { return base_; }

  bool contains(uint64_t bus, uint64_t len) const override { return bus <= size_ && len <= size_ - bus; }
  bool read(uint64_t bus, void* dst, uint64_t len) override;
  bool write(uint64_t bus, const void* src, uint64_t len) override;
  std::unique_ptr<DmaHold> hold_host() override;
  // Registers the whole mapping once per attach.
  void attach(DmaRegistrar& r) override;
  void detach(DmaRegistrar& r) override;

 private:
  class Hold;
  MemfdRam(int fd, std::byte* base, uint64_t size) : fd_(fd), base_(base), size_(size) {}
  int fd_;
  std::byte* base_;
  uint64_t size_;
  std::shared_mutex dma_mutex_;            // holds share it; detach takes it alone
  std::vector<DmaRegistrar*> registrars_;  // one entry per attach (under dma_mutex_)
};

// A bus made of windows, each onto a range of another SystemMemory: the
// mediator's host bus, where each VM's RAM has a window of its own. A DMA
// range must lie in one window, and then in its target (checked at DMA
// time: a target may hold memory only some of the time). Removing a window waits for DMA through
// it to finish; later DMA to it fails.
class BusMap final : public SystemMemory {
 public:
  [[nodiscard]] Status add(uint64_t base, uint64_t size, std::shared_ptr<SystemMemory> target, uint64_t target_base);
  void remove(uint64_t base);

  bool contains(uint64_t bus, uint64_t len) const override;
  bool read(uint64_t bus, void* dst, uint64_t len) override;
  bool write(uint64_t bus, const void* src, uint64_t len) override;
  // A hold keeps every window as it is (remove waits) and holds each
  // target it returns a span of. Registrars reach each window's target.
  std::unique_ptr<DmaHold> hold_host() override;
  void attach(DmaRegistrar& r) override;
  void detach(DmaRegistrar& r) override;

 private:
  class Hold;
  struct Window {
    uint64_t size;
    std::shared_ptr<SystemMemory> target;
    uint64_t target_base;
  };
  // The window holding [bus, bus + len), if one does (lock held).
  const Window* find(uint64_t bus, uint64_t len, uint64_t* offset) const;

  mutable std::shared_mutex mutex_;
  std::map<uint64_t, Window> windows_;     // by base
  std::vector<DmaRegistrar*> registrars_;  // attached (under mutex_)
};

}  // namespace vgpu::gpu
