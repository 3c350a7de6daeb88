// SPDX-License-Identifier: GPL-2.0-or-later
// Hypervisor-reserved VRAM: shadow page tables, shadow instance blocks,
// the physical runlist and USERD pages live here, out of every guest's
// reach. A first-fit allocator with coalescing; memory is zeroed when
// handed out. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "gpu/mem/vram.h"

namespace vgpu::shadow {

class ReservedVram {
 public:
  static constexpr uint64_t GRANULE = 4096;

  ReservedVram(gpu::Vram& vram, uint64_t base, uint64_t size);

  // A zeroed block of at least `bytes`, aligned to `align` (power of two,
  // at least GRANULE); none when the region is exhausted.
  [[nodiscard]] std::optional<uint64_t> alloc(uint64_t bytes, uint64_t align = GRANULE);
  void free(uint64_t addr);

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t used() const;
  uint64_t peak() const;
  bool contains(uint64_t addr) const { return addr >= base_ && addr - base_ < size_; }

 private:
  gpu::Vram& vram_;
  uint64_t base_;
  uint64_t size_;
  mutable std::mutex mutex_;
  std::map<uint64_t, uint64_t> free_;   // addr -> bytes
  std::map<uint64_t, uint64_t> used_;   // addr -> bytes
  uint64_t used_bytes_ = 0;
  uint64_t peak_bytes_ = 0;
};

}  // namespace vgpu::shadow
