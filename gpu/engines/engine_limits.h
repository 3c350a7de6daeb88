// SPDX-License-Identifier: GPL-2.0-or-later
// Host resources one engine operation may use, whatever a guest's
// arguments and page tables ask for (docs/spec/vgpu.md, "Engine limits").
// Views of GPU memory cost no host memory (gpu/mem/mmu.h); these bound
// the copies made where the MMU cannot give a view.
#pragma once

#include <cstdint>

#include "vgpu/bits.h"

namespace vgpu::gpu {

// Bounce copies of a compute launch's buffers that have no host view
// (a range the MMU cannot window): all of one launch's together. A launch
// that would need more ends with bad_argument, its buffers untouched.
inline constexpr uint64_t MAX_BOUNCE_BYTES = 128 * MiB;

// The copy engine moves each line in pieces of at most this many bytes,
// so a piece always has a host view (or a bounce of at most this size),
// however long the line and however its pages are scattered.
inline constexpr uint64_t COPY_PIECE_BYTES = 4 * MiB;

}  // namespace vgpu::gpu
