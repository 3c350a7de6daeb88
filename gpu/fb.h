// SPDX-License-Identifier: GPL-2.0-or-later
// Frame-buffer units: VRAM size discovery (PUNITS, PFB) and MMU control
// (TLB invalidate).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/reg_table.h"

namespace vgpu::gpu {

class FbUnits {
 public:
  // Called with the model lock held for each TLB invalidate: one page
  // directory, or every one (none).
  using Invalidate = std::function<void(std::optional<uint64_t> pdb)>;

  FbUnits(uint64_t vram_bytes, Invalidate invalidate) : vram_bytes_(vram_bytes), invalidate_(std::move(invalidate)) {}
  std::vector<RegRow> registers();
  uint64_t invalidates() const { return invalidates_; }

 private:
  uint64_t vram_bytes_;
  Invalidate invalidate_;
  uint32_t invalidate_pdb_ = 0;
  uint64_t invalidates_ = 0;
};

}  // namespace vgpu::gpu
