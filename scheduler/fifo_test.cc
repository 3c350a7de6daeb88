// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/script.h"

namespace vgpu::sched {
namespace {
using namespace testing;

TEST(Fifo, RunsSubmissionsInArrivalOrderAcrossVms) {
  auto p = policy("fifo", {1, 1, 1});
  arrive(*p, 2, 0, 20);
  arrive(*p, 1, 1, 10);
  arrive(*p, 2, 2, 21);
  arrive(*p, 3, 3, 30);
  arrive(*p, 1, 4, 11);
  std::vector<uint32_t> channels;
  for (int i = 0; i < 5; ++i) {
    const Decision d = p->pick(10);
    ASSERT_TRUE(d.dispatch);
    channels.push_back(d.dispatch->channel);
    p->complete(d.dispatch->vm, 10, 20);
  }
  EXPECT_EQ(channels, (std::vector<uint32_t>{20, 10, 21, 30, 11}));
}

TEST(Fifo, IgnoresWeightsAndBudgets) {
  auto p = policy("fifo", {1, 100});
  arrive(*p, 1, 0);
  arrive(*p, 2, 1);
  EXPECT_EQ(run(*p, 2, 50 * MS), 1u);
  EXPECT_EQ(run(*p, 50 * MS, MS), 2u);
}

// Two always-busy VMs, kernels of 1 ms (vm 1) and 10 ms (vm 2), each VM
// re-submitting 20 us after its completion: FIFO strictly alternates, so
// the long-kernel VM holds the engine 10 of every 11 ms.
TEST(Fifo, AlternatesAlwaysBusyVmsWhateverTheirKernelLength) {
  auto p = policy("fifo", {1, 1});
  arrive(*p, 1, 0);
  arrive(*p, 2, 0);
  uint64_t t = 0;
  std::vector<VmId> order;
  for (int i = 0; i < 6; ++i) {
    const Decision d = p->pick(t);
    ASSERT_TRUE(d.dispatch);
    const VmId vm = d.dispatch->vm;
    order.push_back(vm);
    const uint64_t end = t + (vm == 1 ? MS : 10 * MS);
    p->complete(vm, t, end);
    arrive(*p, vm, end + 20 * US);
    t = end;
  }
  EXPECT_EQ(order, (std::vector<VmId>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(p->gpu_ns(2), 10 * p->gpu_ns(1));
}

}  // namespace
}  // namespace vgpu::sched
