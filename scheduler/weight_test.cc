// SPDX-License-Identifier: GPL-2.0-or-later
// Weights changed at run time (vgpuctl set-weight): CREDIT and BAND use the
// new shares from the next decision on.
#include "scheduler/script.h"

namespace vgpu::sched {
namespace {
using namespace testing;

TEST(SetWeight, CreditBudgetsFollowTheNewWeights) {
  // Registered 1:1, changed to 1:3 before any work: the same order as a
  // policy created 1:3 (credit_test.cc, WeightsSetTheBudget).
  auto p = policy("credit", {1, 1}, P10);
  ASSERT_TRUE(p->set_weight(2, 3));
  const std::vector<VmId> order = four_3ms_kernels_of_two_vms(*p);
  EXPECT_EQ(order, (std::vector<VmId>{1, 2, 2, 2}));
}

// band_with_vm2_over_share (script.h): vm 2 has utilization 0.6 at 20 ms; only
// vm 2 is queued at 22 ms.
TEST(SetWeight, BandStopsYieldingForAVmWhoseShareGrewAboveItsUse) {
  auto p = band_with_vm2_over_share();
  ASSERT_TRUE(p->set_weight(2, 3));  // share 0.75 > utilization 0.6
  const Decision d = p->pick(22 * MS);
  ASSERT_TRUE(d.dispatch);
  EXPECT_EQ(d.dispatch->vm, 2u);
}

TEST(SetWeight, BandYieldsForAVmWhoseShareShrankBelowItsUse) {
  auto p = policy("band", {1, 1}, P10);
  arrive(*p, 2, 0);
  EXPECT_EQ(run(*p, 0, 4 * MS), 2u);  // at 10 ms: utilization 0.4, share 0.5
  arrive(*p, 1, 10 * MS);
  arrive(*p, 2, 10 * MS);
  EXPECT_EQ(run(*p, 10 * MS, MS), 1u);
  ASSERT_TRUE(p->set_weight(1, 9));  // vm 2's share falls to 0.1 < 0.4
  const Decision d = p->pick(11 * MS);
  EXPECT_FALSE(d.dispatch);
  EXPECT_TRUE(d.retry_at_ns);
}

TEST(SetWeight, ZeroOrUnknownVmIsRefusedAndChangesNothing) {
  auto p = policy("band", {1, 1}, P10);
  EXPECT_FALSE(p->set_weight(1, 0));
  EXPECT_FALSE(p->set_weight(7, 3));
  EXPECT_EQ(p->weight(1), 1u);
  EXPECT_EQ(p->weight(7), 0u);
  ASSERT_TRUE(p->set_weight(1, 4));
  EXPECT_EQ(p->weight(1), 4u);
}

}  // namespace
}  // namespace vgpu::sched
