// SPDX-License-Identifier: GPL-2.0-or-later
// Slicing a user kernel's grid on a real GPU (docs/cuda-worker.md,
// "Slicing user kernels"): the module is rewritten once so that each
// .entry takes six more parameters after the guest's (the piece's block
// offset and the whole grid, u32 x/y/z each), and reads %ctaid as
// %ctaid + offset and %nctaid as the whole grid's. A piece is then an
// ordinary launch of a box of blocks.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::worker {

inline constexpr uint32_t SLICE_PARAM_WORDS = 6;  // offset x y z, whole grid x y z

struct RewrittenModule {
  std::string text;  // the rewritten module, or the original when not sliceable
  bool sliceable = false;
  std::string why_not;               // when not sliceable
  std::vector<std::string> entries;  // .entry names in text order
};

// A module whose .func bodies read %ctaid/%nctaid, or that reads either as
// a vector, is not rewritten (its launches run whole).
RewrittenModule rewrite_ctaid(std::string_view ptx);

// Where the six words go in a parameter buffer of `param_bytes`.
inline uint32_t slice_params_offset(uint32_t param_bytes) { return (param_bytes + 3u) & ~3u; }

struct GridPiece {
  uint32_t offset[3];
  uint32_t grid[3];
};

// The grid cut along its outermost dimension of extent over 1 (z, else y,
// else x) into pieces of about `piece_blocks` blocks (at least one slab of
// that dimension each); one piece, the whole grid, when piece_blocks is 0.
std::vector<GridPiece> grid_pieces(const uint32_t grid[3], uint64_t piece_blocks);

}  // namespace vgpu::worker
