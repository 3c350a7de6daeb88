// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter tests' kernels: CUDA C written for these tests
// (test_kernels.cu), compiled by clang-14 (no NVIDIA toolkit) to
// test_kernels.ptx, which kKernels holds as is. The PTX is data, read once
// from the source tree (meson passes its path as VGPU_TEST_KERNELS_PTX).
#pragma once

#include <string>

#include "common/read_file.h"

#ifndef VGPU_TEST_KERNELS_PTX
#error "VGPU_TEST_KERNELS_PTX comes from meson (gpu/ptx/meson.build): the path of test_kernels.ptx"
#endif

namespace vgpu::ptx::testing {

inline const std::string kKernels = read_file_or_abort(VGPU_TEST_KERNELS_PTX);

}  // namespace vgpu::ptx::testing
