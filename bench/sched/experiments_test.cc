// SPDX-License-Identifier: GPL-2.0-or-later
#include "bench/sched/experiments.h"

#include <gtest/gtest.h>

namespace vgpu::bench {
namespace {

constexpr uint64_t MS = 1'000'000;

TEST(SchedBench, JainIndexIsOneForEqualRatiosAndOneOverNForOneHog) {
  EXPECT_DOUBLE_EQ(jain_index({1, 1, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index({4, 0, 0, 0}), 0.25);
}

TEST(SchedBench, TargetsFollowWeightsForAlwaysBusyVms) {
  const auto t = target_shares({{1, MS, 0}, {3, MS, 0}});
  EXPECT_DOUBLE_EQ(t[0], 0.25);
  EXPECT_DOUBLE_EQ(t[1], 0.75);
}

TEST(SchedBench, ThinkingVmTargetIsCappedAtItsDemand) {
  // Demand 1/(1+4) = 0.2 < 1/3: the other two split the remaining 0.8.
  const auto t = target_shares({{1, MS, 4 * MS}, {1, MS, 0}, {1, MS, 0}});
  EXPECT_DOUBLE_EQ(t[0], 0.2);
  EXPECT_DOUBLE_EQ(t[1], 0.4);
  EXPECT_DOUBLE_EQ(t[2], 0.4);
}

TEST(SchedBench, SimulationIsDeterministic) {
  SimConfig c{.policy = "band", .vms = {{1, MS, 0}, {1, 10 * MS, 0}}, .duration_ns = 500 * MS};
  auto a = simulate(c);
  auto b = simulate(c);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->vms[0].gpu_ns, b->vms[0].gpu_ns);
  EXPECT_EQ(a->vms[1].gpu_ns, b->vms[1].gpu_ns);
  EXPECT_EQ(a->dispatched, b->dispatched);
}

TEST(SchedBench, FifoGivesTheLongKernelVmTenOfElevenParts) {
  SimConfig c{.policy = "fifo", .vms = {{1, MS, 0}, {1, 10 * MS, 0}}, .duration_ns = 1100 * MS};
  auto r = simulate(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->vms[1].gpu_ns, 10 * r->vms[0].gpu_ns);
}

TEST(SchedBench, EngineNeverRunsTwoKernelsAtOnce) {
  SimConfig c{.policy = "band", .vms = {{1, MS, 0}, {1, 3 * MS, 0}, {1, 7 * MS, 0}}, .duration_ns = 300 * MS};
  auto r = simulate(c);
  ASSERT_TRUE(r);
  uint64_t busy = 0;
  for (const auto& v : r->vms) busy += v.gpu_ns;
  EXPECT_LE(busy, r->elapsed_ns);
}

TEST(SchedBench, UnknownPolicyIsReported) {
  SimConfig c{.policy = "edf", .vms = {{1, MS, 0}}};
  auto r = simulate(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'edf'"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::bench
