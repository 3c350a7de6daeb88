// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d with an explicit workspace bound (internal; conv2d() uses the
// default bound). Exposed so tests can force band boundaries that split
// output rows without allocating large images. The bound sets the band of
// output positions, so tiles are numbered under the same bound only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/kernels/tile_pool.h"
#include "vgpu/classes.h"

namespace vgpu::gpu::kernels::detail {

void conv2d_banded(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output,
                   size_t workspace_floats);
// Tiles [first, first + count) of the launch under this bound.
uint64_t conv2d_tiles_run(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output,
                          uint64_t first, uint64_t count, size_t workspace_floats, const TileStop& stop = {});

// For kernel_bench's conv2d in one BLAS call per image (what tiles cost
// against it): whether the launch reads the image as its own column
// matrix, and columns [j0, j1) of an image's im2col matrix into col (CRS
// rows of j1 - j0 floats), as the tiles build them.
bool conv2d_pointwise(const cls::Conv2dArgs& args);
void conv2d_im2col(const cls::Conv2dArgs& args, const float* image, int64_t j0, int64_t j1, float* col);

}  // namespace vgpu::gpu::kernels::detail
