// SPDX-License-Identifier: GPL-2.0-or-later
// The compute object's test fixture (compute_object_test.cc: kernels,
// slices, time; compute_object_methods_test.cc: constant buffers,
// reports, bad input): GPU memory for buffers, a mesa-like launch
// sequence (its pieces from compute_launch.h), and the kernels' reference
// checks both files use.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/engines/compute_object.h"
#include "gpu/engines/engine_limits.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/engines/testing/compute_launch.h"
#include "gpu/kernels/kernels.h"
#include "gpu/kernels/reference.h"

namespace vgpu::gpu::testing {

using namespace cls::compute;
using cls::Kernel;

inline std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * scale) + offset;
  return v;
}

inline void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1.0f + std::fabs(want[i]))) << "element " << i;
}

class ComputeTest : public ComputeLaunchEnv {
 protected:
  static constexpr uint64_t BUFFERS_VA = LINEAR_VA + 0x10000;

  // GPU memory for one buffer of floats, filled with `init`.
  uint64_t buffer(const std::vector<float>& init) {
    const uint64_t va = next_buffer_;
    next_buffer_ = align_up(next_buffer_ + init.size() * sizeof(float) + 1, 256);
    write_vec(va, init);
    return va;
  }

  // A mesa-like launch sequence for a kernel with these arguments.
  template <typename Args>
  std::vector<Method> launch_sequence(const Args& args, bool bind = true) {
    std::vector<Method> m = program_and_args(args, bind);
    append(m, {{SET_SHADER_SHARED_MEMORY_SIZE, 0x100},
               {SET_CTA_THREAD_COUNT, BLOCK_THREADS},
               {SET_CTA_BARRIER_COUNT, 1},
               {SET_CTA_REGISTER_COUNT, 16},
               {SET_GRID_PARAM, 1},
               {SET_LAUNCH_ID, 0},
               {INVALIDATE_SHADER_CACHES_NO_WFI, 0x1011}});
    append(m, grid(grid_x_, grid_y_));
    append(m, {{BEGIN_GRID, 0}, {SET_LAUNCH_SIZE, 0}, {LAUNCH, 0x1000}, {END_GRID, 0}, {WAIT_REF_COUNT, 1}});
    return m;
  }

  template <typename Args>
  MethodDone run(Kernel kernel, const Args& args) {
    write_program(static_cast<uint32_t>(kernel));
    return send(compute_, launch_sequence(args));
  }

  // Runs `kernel` with `args`, then `reference()`, which computes into
  // `want` on the host what the output at `out_va` must be, and compares.
  template <typename Args, typename Reference>
  void expect_matches_reference(Kernel kernel, const Args& args, Reference reference, uint64_t out_va,
                                const std::vector<float>& want, float rel) {
    ASSERT_TRUE(run(kernel, args).has_value());
    reference();
    expect_near_all(read_vec<float>(out_va, want.size()), want, rel);
  }

  void expect_error(const MethodDone& r, regs::ChannelError code, uint32_t method = LAUNCH) {
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, code);
    EXPECT_EQ(r.error().method, method);
  }

  ComputeObject compute_;
  uint64_t next_buffer_ = BUFFERS_VA;
  void fill_writes_value();
  void saxpy_matches_reference();
  void madd_matches_reference();
  void conv2d_matches_reference(uint32_t n, uint32_t k);
  void mriq_matches_reference(uint32_t x_points);

  // Pieces a sliced launch runs in: none where a device runs it whole (docs/cuda.md).
  int pieces(int n) const { return device_engines_ ? 0 : n; }

  uint32_t grid_x_ = 4;  // the launch's grid: grid_x_ x grid_y_ x 1 blocks
  uint32_t grid_y_ = 1;
};


}  // namespace vgpu::gpu::testing
