// SPDX-License-Identifier: GPL-2.0-or-later
// A host address range the size of a BAR (BAR1 or BAR3) into which VRAM
// pages are mapped at BAR offsets, as QEMU's memory map does for a BAR
// region backed by RAM. Unmapped pages are PROT_NONE: an access there is
// a host fault, so callers ask span() first. Used by the native driver
// port and by the testbed's BAR remap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/error.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

class BarWindow {
 public:
  // bar_bytes: non-zero multiple of the host page size (4 KiB).
  static Result<std::unique_ptr<BarWindow>> create(Vram& vram, uint64_t bar_bytes);
  ~BarWindow();
  BarWindow(const BarWindow&) = delete;
  BarWindow& operator=(const BarWindow&) = delete;

  std::byte* base() const { return base_; }
  uint64_t size() const { return size_; }

  // Map [vram_addr, vram_addr+bytes) at [bar_off, bar_off+bytes), replacing
  // what was there. All three are multiples of 4 KiB and in range.
  [[nodiscard]] Status map_page(uint64_t bar_off, uint64_t vram_addr, uint64_t bytes, bool read_only);
  // Back to PROT_NONE (the address range stays reserved).
  [[nodiscard]] Status unmap_page(uint64_t bar_off, uint64_t bytes);
  // Unmap everything.
  void clear();

  // The host bytes of [bar_off, bar_off+len) if every page in it is mapped
  // (and writable, if `write`); otherwise an empty span. The span stays
  // valid only until its pages are unmapped or remapped.
  std::span<std::byte> span(uint64_t bar_off, uint64_t len, bool write = false) const;
  bool mapped(uint64_t bar_off) const;

 private:
  enum class PageState : uint8_t { unmapped, read_only, read_write };
  BarWindow(Vram& vram, std::byte* base, uint64_t size);
  [[nodiscard]] Status check(uint64_t bar_off, uint64_t bytes) const;

  Vram& vram_;
  std::byte* base_;
  uint64_t size_;
  mutable std::mutex mutex_;
  std::vector<PageState> pages_;  // one per 4 KiB page of the BAR
};

}  // namespace vgpu::gpu
