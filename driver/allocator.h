// SPDX-License-Identifier: GPL-2.0-or-later
// A first-fit range allocator with alignment, free and coalescing. The
// driver uses one for VRAM, one for the instance heap (the VRAM that BAR3
// maps) and one per GPU address space for virtual addresses. Every
// allocation is one contiguous range, so buffers are physically contiguous
// and compute kernels get direct views of them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/error.h"
#include "common/free_ranges.h"

namespace vgpu::driver {

class RangeAllocator {
 public:
  // Manages [base, base + size). `name` appears in error messages.
  RangeAllocator(std::string name, uint64_t base, uint64_t size);

  // A range of `bytes` (> 0) whose start is a multiple of `align` (a power
  // of two). out_of_memory when no free range fits.
  [[nodiscard]] Result<uint64_t> alloc(uint64_t bytes, uint64_t align);
  // Takes [addr, addr + bytes) out of the free space (the driver's own
  // fixed ranges). invalid_argument when any part is not free.
  [[nodiscard]] Status reserve(uint64_t addr, uint64_t bytes);
  // Returns an allocation (or reservation) by its start address; adjacent
  // free ranges merge. not_found when addr does not start one.
  [[nodiscard]] Status free(uint64_t addr);

  // Size of the allocation starting at addr, 0 if none.
  uint64_t allocation_size(uint64_t addr) const;
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_free() const;
  size_t free_ranges() const { return free_.count(); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  uint64_t base_;
  uint64_t size_;
  uint64_t free_bytes_;
  FreeRanges free_;
  std::map<uint64_t, uint64_t> used_;  // start -> bytes
};

}  // namespace vgpu::driver
