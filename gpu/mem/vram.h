// SPDX-License-Identifier: GPL-2.0-or-later
// VRAM of the software GPU: host memory backed by a memfd, so that QEMU
// (BAR remap) and a host daemon can map the same pages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/error.h"
#include "gpu/mem/dirty_log.h"
#include "vgpu/bits.h"

namespace vgpu::gpu {

// Told before the host touches VRAM bytes, so that a device back end that
// mirrors VRAM in GPU memory can make them valid first (docs/cuda.md).
class VramObserver {
 public:
  virtual ~VramObserver() = default;
  // A CPU-side access to [addr, addr+len) is about to happen.
  virtual void host_access(uint64_t addr, uint64_t len, bool write) = 0;
  // A CPU store to [addr, addr+len) happens between these two calls: a
  // mirror must not copy those host bytes to the device in between (the
  // copy would miss the store; docs/migration.md §8). Default: a write
  // access told before the store, as host_access.
  virtual void begin_host_write(uint64_t addr, uint64_t len) { host_access(addr, len, true); }
  virtual void end_host_write(uint64_t, uint64_t) {}
  // [addr, addr+len) got new backing pages (detach: another process's,
  // shared; reattach: zeroes, not shared).
  virtual void host_remapped(uint64_t addr, uint64_t len, bool shared) = 0;
};

class Vram {
 public:
  // bytes: non-zero and a multiple of the 4 KiB small page.
  static Result<std::unique_ptr<Vram>> create(uint64_t bytes);
  ~Vram();
  Vram(const Vram&) = delete;
  Vram& operator=(const Vram&) = delete;

  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  std::byte* data() { return base_; }
  const std::byte* data() const { return base_; }

  bool contains(uint64_t addr, uint64_t len) const { return addr <= size_ && len <= size_ - addr; }

  // At most one observer (the device back end's residency tracker); it
  // must outlive its registration. Every accessor below tells it: a read
  // before it, a write around its store. Code that uses data() directly
  // tells it itself: host_access before a read, and begin_host_write /
  // end_host_write around its stores (a host view mapped for writing holds
  // them from its mapping to its end, a user kernel from a page's first
  // store to the end of its piece; docs/migration.md §8). Between the two
  // it must not wait for anything that waits for an upload of those pages.
  void set_observer(VramObserver* observer) { observer_.store(observer, std::memory_order_release); }
  void host_access(uint64_t addr, uint64_t len, bool write) const {
    if (VramObserver* o = observer_.load(std::memory_order_acquire)) o->host_access(addr, len, write);
  }
  void begin_host_write(uint64_t addr, uint64_t len) const {
    if (VramObserver* o = observer_.load(std::memory_order_acquire)) o->begin_host_write(addr, len);
  }
  // The stores are done: the observer told, then the range marked in the
  // dirty log (after the stores, as every writer below does).
  void end_host_write(uint64_t addr, uint64_t len) {
    if (VramObserver* o = observer_.load(std::memory_order_acquire)) o->end_host_write(addr, len);
    dirty_.mark(addr, len);
  }

  // Pages the host wrote while migration logs them (docs/migration.md §5).
  // Every writer below marks after its store; code that writes through
  // data() marks itself (Mmu's copies) or through end_host_write (host
  // views, user kernels).
  DirtyLog& dirty_log() { return dirty_; }
  void mark_written(uint64_t addr, uint64_t len) { dirty_.mark(addr, len); }

  // Naturally aligned, single-copy atomic accesses (the GPU and the CPU
  // poll the same words). Out of range or misaligned: reads give all ones,
  // writes are dropped, and the result says false.
  uint32_t read32(uint64_t addr) const;
  uint64_t read64(uint64_t addr) const;
  bool write32(uint64_t addr, uint32_t value);
  bool write64(uint64_t addr, uint64_t value);

  // Word accessors relative to `base`, for the codecs of vgpu/formats.h.
  auto reader(uint64_t base) const {
    return [this, base](uint32_t off) { return read32(base + off); };
  }
  auto writer(uint64_t base) {
    return [this, base](uint32_t off, uint32_t value) { write32(base + off, value); };
  }

  // A range given its own memfd, for a process that must see this range
  // and nothing else (a VM of the host daemon, vgpud/): `detach` backs
  // [addr, addr+len) with a new zeroed memfd, sealed against shrinking and
  // growing (a peer could otherwise make this process's accesses fault),
  // mapped at the same place, and returns it (the caller owns the fd).
  // `reattach` puts the range back on the VRAM's own memfd, zeroed: what a
  // peer still does through the detached fd no longer reaches the GPU.
  // Both page-aligned; accesses by other threads meanwhile see old or new
  // pages, never a hole (MAP_FIXED replaces the mapping in one step).
  [[nodiscard]] Result<int> detach(uint64_t addr, uint64_t len);
  [[nodiscard]] Status reattach(uint64_t addr, uint64_t len);

  // Byte copies (not atomic). Out of range: nothing is copied, false.
  [[nodiscard]] bool read(uint64_t addr, void* dst, uint64_t len) const;
  [[nodiscard]] bool write(uint64_t addr, const void* src, uint64_t len);
  [[nodiscard]] bool fill(uint64_t addr, std::byte value, uint64_t len);
  // Zeroes a range. Whole pages of a range of ZERO_HOLE_MIN or more are
  // given back to the host (a hole in the memfd reads as zeros) instead of
  // written: zeroing a VM's partition costs no memory. A smaller range (a
  // shadow table the mediator scans right after) is written: each page of
  // a hole comes back with a page fault at its next access, which cost
  // more than the memset. Not with an observer (a device mirrors VRAM and
  // has pinned its pages): then the bytes are written.
  static constexpr uint64_t ZERO_HOLE_MIN = 1 * MiB;
  [[nodiscard]] bool zero(uint64_t addr, uint64_t len);

 private:
  Vram(int fd, std::byte* base, uint64_t size) : fd_(fd), base_(base), size_(size), dirty_(size) {}
  // The 32- and 64-bit accessors (read32 and the rest), one body for both widths.
  template <typename T>
  T load(uint64_t addr) const;
  template <typename T>
  bool store(uint64_t addr, T value);
  // Runs `write` (the CPU's store to [addr, addr+len)) inside the
  // observer's begin/end_host_write, then marks the range dirty.
  template <typename Write>
  void host_write(uint64_t addr, uint64_t len, Write write);
  int fd_;
  std::byte* base_;
  uint64_t size_;
  std::atomic<VramObserver*> observer_{nullptr};
  DirtyLog dirty_;
};

}  // namespace vgpu::gpu
