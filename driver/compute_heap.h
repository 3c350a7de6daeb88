// SPDX-License-Identifier: GPL-2.0-or-later
// Memory for user kernels (docs/spec/vgpu.md §10.6, "The compute
// aperture"): whole 2 MiB blocks of physically contiguous, 2 MiB-aligned
// VRAM mapped at 2 MiB-aligned VAs in [COMPUTE_APERTURE_BASE,
// COMPUTE_APERTURE_END), the mapping a real GPU's back end can take over
// as it is. An allocation of a block or more gets blocks of its own; a
// smaller one shares a block with others, in 4 KiB pages (so that each
// still maps into BAR1 on its own for direct transfers). A block nobody
// uses any more goes back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "common/error.h"
#include "driver/address_space.h"
#include "driver/allocator.h"

namespace vgpu::driver {

inline constexpr uint64_t COMPUTE_APERTURE_BASE = uint64_t{0x80} << 32;  // 512 GiB
inline constexpr uint64_t COMPUTE_APERTURE_END = fmt::VA_LIMIT;          // 1 TiB
inline constexpr uint64_t COMPUTE_BLOCK = uint64_t{2} << 20;             // 2 MiB
inline constexpr uint64_t COMPUTE_PAGE = fmt::SMALL_PAGE;                // a shared block's unit

struct ComputeRange {
  uint64_t vram;  // physical
  uint64_t va;
};

class ComputeHeap {
 public:
  // `as` must have the aperture reserved out of its own VA allocator.
  ComputeHeap(AddressSpace& as, RangeAllocator& vram);
  ~ComputeHeap();
  ComputeHeap(const ComputeHeap&) = delete;
  ComputeHeap& operator=(const ComputeHeap&) = delete;

  [[nodiscard]] Result<ComputeRange> alloc(uint64_t bytes);
  [[nodiscard]] Status free(uint64_t va);
  bool contains(uint64_t va) const { return va >= COMPUTE_APERTURE_BASE && va < COMPUTE_APERTURE_END; }

 private:
  struct Block {  // one mapping of `bytes` (a multiple of COMPUTE_BLOCK)
    uint64_t vram;
    uint64_t bytes;
    std::unique_ptr<RangeAllocator> pages;  // shared blocks only
  };
  [[nodiscard]] Result<std::map<uint64_t, Block>::iterator> new_block(uint64_t bytes, bool shared);
  [[nodiscard]] Status release(std::map<uint64_t, Block>::iterator it);

  AddressSpace& as_;
  RangeAllocator& vram_;
  RangeAllocator va_;
  std::map<uint64_t, Block> blocks_;  // by VA
};

}  // namespace vgpu::driver
