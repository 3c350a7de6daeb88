// SPDX-License-Identifier: GPL-2.0-or-later
// The copy engine's data mover: a pitch-linear copy of `lines` lines of
// `line_bytes` bytes, each translated through the channel's page tables.
// Overlapping source and destination copy as memmove would.
#pragma once

#include <cstdint>
#include <functional>

#include "gpu/mem/mmu.h"

namespace vgpu::gpu {

struct PitchCopy {
  uint64_t src = 0;  // GPU VA of the first source line
  uint64_t dst = 0;  // GPU VA of the first destination line
  uint64_t line_bytes = 0;
  uint64_t lines = 0;
  uint64_t pitch_in = 0;   // bytes between source lines
  uint64_t pitch_out = 0;  // bytes between destination lines

  uint64_t total_bytes() const { return line_bytes * lines; }
  // Bytes from the first line's start to the last line's end (lines > 0).
  uint64_t src_extent() const { return (lines - 1) * pitch_in + line_bytes; }
  uint64_t dst_extent() const { return (lines - 1) * pitch_out + line_bytes; }
};

// Copies line by line, each line in pieces of at most COPY_PIECE_BYTES
// (gpu/engines/engine_limits.h), so the host memory a copy uses is bounded
// whatever its size. When the destination starts above an overlapping
// source the lines and pieces go last to first, so that equal pitches give
// memmove semantics for the whole rectangle. On a fault, the lines and
// pieces before the faulting one (in copy order) have been copied.
[[nodiscard]] Walk<void> pitch_copy(Mmu& mmu, const AccessContext& as, const PitchCopy& copy);

// The same, asking `expired` before each piece: false once it said so
// (the pieces before it, in copy order, have been copied). The boundaries
// at which the copy engine can stop (docs/spec/vgpu.md, ENGINE_TIMEOUT).
[[nodiscard]] Walk<bool> pitch_copy_until(Mmu& mmu, const AccessContext& as, const PitchCopy& copy,
                                          const std::function<bool()>& expired);

// Where a copy stopped, in copy order: lines done, pieces of the next
// line done, and the bytes copied so far.
struct CopyCursor {
  uint64_t line = 0;
  uint64_t piece = 0;
  uint64_t bytes = 0;
  bool finished(const PitchCopy& copy) const { return line >= copy.lines; }
};

// The copy from `at` on, asking `stop` before each piece: false once it
// said so, with `at` where the copy resumes (the resumable pieces of a
// timed CHAN_SLICE, docs/spec/vgpu.md §10.5); on a fault, `at` is the
// faulting piece.
[[nodiscard]] Walk<bool> pitch_copy_from(Mmu& mmu, const AccessContext& as, const PitchCopy& copy, CopyCursor& at,
                                         const std::function<bool()>& stop);

}  // namespace vgpu::gpu
