// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d with an explicit workspace bound (internal; conv2d() uses the
// default bound). Exposed so tests can force band boundaries that split
// output rows without allocating large images. The bound sets the band of
// output positions, so tiles are numbered under the same bound only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vgpu/classes.h"

namespace vgpu::gpu::kernels::detail {

void conv2d_banded(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output,
                   size_t workspace_floats);
// Tiles [first, first + count) of the launch under this bound.
void conv2d_tiles_run(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output,
                      uint64_t first, uint64_t count, size_t workspace_floats);

}  // namespace vgpu::gpu::kernels::detail
