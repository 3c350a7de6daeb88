// SPDX-License-Identifier: GPL-2.0-or-later
// Tests run in each build of the fast path's kernels (exec_fast.h): the
// CPU's best (AVX-512 where it has it), at most AVX2 (where it has AVX2),
// and the baseline. A fixture derives from FastBuildTest and is
// instantiated with FAST_BUILDS and fast_build_name.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "gpu/ptx/exec_fast.h"

namespace vgpu::ptx::testing {

class FastBuildTest : public ::testing::TestWithParam<exec::FastIsa> {
 protected:
  void SetUp() override { exec::fast_isa_limit() = GetParam(); }
  void TearDown() override { exec::fast_isa_limit() = exec::FastIsa::best; }
};

inline constexpr std::array FAST_BUILDS{exec::FastIsa::best, exec::FastIsa::avx2, exec::FastIsa::baseline};

inline std::string fast_build_name(const ::testing::TestParamInfo<exec::FastIsa>& p) {
  return p.param == exec::FastIsa::best ? "cpu" : p.param == exec::FastIsa::avx2 ? "avx2" : "baseline";
}

}  // namespace vgpu::ptx::testing
