// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/script.h"

namespace vgpu::sched {
namespace {
using namespace testing;

// band_with_vm2_over_share (script.h): vm 2 over its share, demoted, at 22 ms.

TEST(Band, OverShareVmPickedAfterAnotherWaitsTheYieldWindow) {
  auto p = band_with_vm2_over_share();
  const Decision d = p->pick(22 * MS);
  EXPECT_FALSE(d.dispatch);
  ASSERT_TRUE(d.retry_at_ns);
  EXPECT_EQ(*d.retry_at_ns, 22 * MS + 500 * US);
}

TEST(Band, VmArrivingInTheYieldWindowGoesFirst) {
  auto p = band_with_vm2_over_share();
  ASSERT_FALSE(p->pick(22 * MS).dispatch);
  arrive(*p, 1, 22 * MS + 20 * US);
  EXPECT_EQ(run(*p, 22 * MS + 20 * US, MS), 1u);
}

TEST(Band, OverShareVmRunsWhenTheWindowPassesUnused) {
  auto p = band_with_vm2_over_share();
  ASSERT_FALSE(p->pick(22 * MS).dispatch);
  const Decision early = p->pick(22 * MS + 100 * US);
  EXPECT_FALSE(early.dispatch);
  EXPECT_EQ(run(*p, 22 * MS + 500 * US, MS), 2u);
}

TEST(Band, YieldWindowIsSettable) {
  auto p = policy("band", {1, 1}, PolicyParams{.period_ns = 10 * MS, .yield_window_ns = 2 * MS});
  arrive(*p, 2, 0);
  run(*p, 0, 12 * MS);
  arrive(*p, 2, 12 * MS);
  run(*p, 12 * MS, 9 * MS);
  arrive(*p, 1, 21 * MS);
  arrive(*p, 2, 21 * MS);
  run(*p, 21 * MS, MS);
  EXPECT_EQ(p->pick(22 * MS).retry_at_ns, 24 * MS);
}

TEST(Band, CreditWithTheSameScriptDispatchesAtOnce) {
  auto p = band_with_vm2_over_share("credit");
  const Decision d = p->pick(22 * MS);
  ASSERT_TRUE(d.dispatch);
  EXPECT_EQ(d.dispatch->vm, 2u);
}

TEST(Band, OverBudgetAloneDoesNotDemote) {
  // vm 1 uses 6 ms of its 5 ms budget, but no utilization has been measured
  // yet (no period boundary): BAND keeps it first, CREDIT demotes it.
  for (const auto& [name, expected] : {std::pair{"band", 1u}, std::pair{"credit", 2u}}) {
    auto p = policy(name, {1, 1}, P10);
    arrive(*p, 1, 0);
    arrive(*p, 1, 0);
    arrive(*p, 2, 0);
    EXPECT_EQ(run(*p, 0, 6 * MS), 1u);
    EXPECT_EQ(run(*p, 6 * MS, MS), expected) << name;
  }
}

TEST(Band, LoneVmNeverYieldsToItself) {
  auto p = policy("band", {1, 1}, P10);
  uint64_t t = 0;
  for (int i = 0; i < 5; ++i) {
    arrive(*p, 1, t);
    const Decision d = p->pick(t);
    ASSERT_TRUE(d.dispatch) << "kernel " << i;
    p->complete(1, t, t + 10 * MS);
    t += 10 * MS;
  }
}

// Two always-busy VMs, 1 ms (vm 1) and 10 ms (vm 2) kernels, re-submitting
// 20 us after completion. With vm 2 over its share, every vm 1 completion
// opens a yield window that vm 1 re-enters: vm 1 runs back to back.
TEST(Band, ShortKernelVmReentersWhileLongKernelVmIsOverShare) {
  auto p = band_with_vm2_over_share();
  uint64_t t = 22 * MS;
  std::vector<VmId> order;
  for (int i = 0; i < 4; ++i) {
    ASSERT_FALSE(p->pick(t).dispatch);
    arrive(*p, 1, t + 20 * US);
    t += 20 * US;
    order.push_back(run(*p, t, MS));
    t += MS;
  }
  EXPECT_EQ(order, (std::vector<VmId>{1, 1, 1, 1}));
}

}  // namespace
}  // namespace vgpu::sched
