// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/script.h"

namespace vgpu::sched {
namespace {
using namespace testing;

TEST(Credit, PicksFirstQueuedVmInRunListOrder) {
  auto p = policy("credit", {1, 1}, P10);
  arrive(*p, 2, 0);
  arrive(*p, 1, 1);
  EXPECT_EQ(run(*p, 2, MS), 1u);
}

TEST(Credit, VmThatUsedItsBudgetGoesBehindTheOthers) {
  auto p = policy("credit", {1, 1}, P10);
  for (int i = 0; i < 2; ++i) {
    arrive(*p, 1, 0);
    arrive(*p, 2, 0);
  }
  const Slot slots[] = {
      {0, 6 * MS},       // vm 1: 5 - 6 = -1 ms: demoted
      {6 * MS, 1 * MS},  // vm 2: 4 ms left: stays first
      {7 * MS, 1 * MS},  // vm 2 again
      {8 * MS, 1 * MS},  // vm 1, the only one queued
  };
  EXPECT_EQ(run_each(*p, slots), (std::vector<VmId>{1, 2, 2, 1}));
}

TEST(Credit, OverBudgetVmStillRunsWhenNoOtherHasWork) {
  auto p = policy("credit", {1, 1}, P10);
  arrive(*p, 1, 0);
  arrive(*p, 1, 0);
  EXPECT_EQ(run(*p, 0, 8 * MS), 1u);
  EXPECT_EQ(run(*p, 8 * MS, MS), 1u);
}

TEST(Credit, WeightsSetTheBudget) {
  // Weights 1 and 3: budgets 2.5 ms and 7.5 ms per 10 ms period.
  auto p = policy("credit", {1, 3}, P10);
  const std::vector<VmId> order = four_3ms_kernels_of_two_vms(*p);
  // vm 1 is over after one 3 ms kernel; vm 2 only after three.
  EXPECT_EQ(order, (std::vector<VmId>{1, 2, 2, 2}));
}

TEST(Credit, ReplenishmentAtThePeriodRestoresBudget) {
  auto p = policy("credit", {1, 1}, P10);
  for (int i = 0; i < 3; ++i) arrive(*p, 1, 0);
  for (int i = 0; i < 2; ++i) arrive(*p, 2, 0);
  const Slot slots[] = {
      {0, 6 * MS},        // vm 1: 5 - 6 = -1 ms: demoted
      {6 * MS, 10 * MS},  // at 10 ms both +5; vm 2: 10 - 10 = 0: demoted
      {16 * MS, 3 * MS},  // vm 1: 4 - 3 = 1 ms left: stays first
      {19 * MS, 1 * MS},
  };
  EXPECT_EQ(run_each(*p, slots), (std::vector<VmId>{1, 2, 1, 1}));
}

TEST(Credit, DebtBeyondTheLimitIsForgivenAtReplenishment) {
  // Gdev's rule: at a replenishment, budget above +period (hoarded) or below
  // -period (debt) resets to zero.
  auto p = policy("credit", {1, 1}, P10);
  for (int i = 0; i < 4; ++i) arrive(*p, 1, 0);
  for (int i = 0; i < 3; ++i) arrive(*p, 2, 0);
  const Slot slots[] = {
      {0, 25 * MS},       // 10 ms: 10; 20 ms: 15 -> 0; then -25
      {25 * MS, 4 * MS},  // vm 2 likewise 0 at 20 ms; -4: demoted
      {31 * MS, 1 * MS},  // 30 ms: vm 1 -20 -> 0 (forgiven); -1
      {32 * MS, 1 * MS},  // vm 2: -4 + 5 - 1 = 0: demoted
      {41 * MS, 1 * MS},  // 40 ms: vm 1 -1 + 5 = 4; 3 left: stays first
      {42 * MS, 1 * MS},
  };
  EXPECT_EQ(run_each(*p, slots), (std::vector<VmId>{1, 2, 1, 2, 1, 1}));
}

}  // namespace
}  // namespace vgpu::sched
