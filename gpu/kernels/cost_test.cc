// SPDX-License-Identifier: GPL-2.0-or-later
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr uint64_t MAX = std::numeric_limits<uint64_t>::max();
const CostModel DEFAULT{};  // 1000 flops/ns, 144 bytes/ns, 5000 ns launch

TEST(Cost, SgemmIsTwoMnkFlopsPlusLaunch) {
  cls::SgemmArgs a{};
  a.m = 1000, a.n = 1000, a.k = 1000;
  EXPECT_EQ(sgemm_cost_ns(DEFAULT, a), 2'000'000u + 5000u);
}

TEST(Cost, Conv2dCountsOutputTimesFilterFlops) {
  cls::Conv2dArgs a{};  // DeepBench conv1: P = 38, Q = 166
  a.n = 4, a.c = 32, a.h = 79, a.w = 341, a.k = 32, a.r = 5, a.s = 10, a.stride_h = 2, a.stride_w = 2;
  const uint64_t flops = 2ull * 4 * 32 * 38 * 166 * 32 * 5 * 10;
  EXPECT_EQ(conv2d_cost_ns(DEFAULT, a), (flops + 999) / 1000 + 5000u);  // rounded up
}

TEST(Cost, InvalidConv2dCostsLaunchOnly) {
  cls::Conv2dArgs a{};
  a.n = 1, a.c = 1, a.h = 4, a.w = 4, a.k = 1, a.r = 3, a.s = 3;  // stride 0
  EXPECT_EQ(conv2d_cost_ns(DEFAULT, a), 5000u);
}

TEST(Cost, MriqIs44FlopEquivalentsPerElement) {
  EXPECT_EQ(mriq_cost_ns(DEFAULT, 1000, 2000), 44u * 1000 * 2000 / 1000 + 5000u);
}

TEST(Cost, StreamIsBytesOverBandwidthRoundedUp) {
  EXPECT_EQ(stream_cost_ns(DEFAULT, 144 * 1000), 1000u + 5000u);
  EXPECT_EQ(stream_cost_ns(DEFAULT, 145), 2u + 5000u);
  EXPECT_EQ(stream_cost_ns(DEFAULT, 0), 5000u);
}

TEST(Cost, SpinCostsExactlyItsDuration) {
  EXPECT_EQ(spin_cost_ns(DEFAULT, 123456), 123456u);
  EXPECT_EQ(spin_cost_ns(DEFAULT, MAX), MAX);
}

TEST(Cost, HugeWorkSaturates) {
  CostModel slow{};
  slow.flops_per_ns = 1e-9;
  cls::SgemmArgs a{};
  a.m = UINT32_MAX, a.n = UINT32_MAX, a.k = UINT32_MAX;
  EXPECT_EQ(sgemm_cost_ns(slow, a), MAX);
  EXPECT_EQ(mriq_cost_ns(slow, UINT32_MAX, UINT32_MAX), MAX);
}

TEST(Cost, LaunchAddSaturates) {
  CostModel m{};
  m.launch_ns = MAX;
  EXPECT_EQ(stream_cost_ns(m, 1'000'000), MAX);
}

TEST(Cost, NonPositiveRateSaturatesNonZeroWork) {
  CostModel broken{};
  broken.bytes_per_ns = 0.0;
  EXPECT_EQ(stream_cost_ns(broken, 1), MAX);
  EXPECT_EQ(stream_cost_ns(broken, 0), 5000u);
}

}  // namespace
}  // namespace vgpu::gpu::kernels
