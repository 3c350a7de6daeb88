// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter tests' kernels: CUDA C written for these tests
// (test_kernels.cu), compiled by clang-14 (no NVIDIA toolkit) to
// test_kernels.ptx, which kKernels holds as is. The PTX is data, read once
// from the source tree (meson passes its path as VGPU_TEST_KERNELS_PTX).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#ifndef VGPU_TEST_KERNELS_PTX
#error "VGPU_TEST_KERNELS_PTX comes from meson (gpu/ptx/meson.build): the path of test_kernels.ptx"
#endif

namespace vgpu::ptx::testing {

inline std::string read_test_kernels() {
  std::ifstream in(VGPU_TEST_KERNELS_PTX);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", VGPU_TEST_KERNELS_PTX);
    std::abort();
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline const std::string kKernels = read_test_kernels();

}  // namespace vgpu::ptx::testing
