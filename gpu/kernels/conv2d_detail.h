// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d with an explicit workspace bound (internal; conv2d() uses the
// default bound). Exposed so tests can force band boundaries that split
// output rows without allocating large images.
#pragma once

#include <cstddef>

#include "vgpu/classes.h"

namespace vgpu::gpu::kernels::detail {

void conv2d_banded(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output,
                   size_t workspace_floats);

}  // namespace vgpu::gpu::kernels::detail
