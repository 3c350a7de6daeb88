// SPDX-License-Identifier: GPL-2.0-or-later
// Test helper: drive a policy through a scripted case and record the order
// of dispatched VMs.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "scheduler/policy.h"

namespace vgpu::sched::testing {

constexpr uint64_t MS = 1'000'000;
constexpr uint64_t US = 1'000;

// Period 10 ms: two equal VMs get 5 ms of budget each per period.
constexpr PolicyParams P10{.period_ns = 10 * MS};

inline std::unique_ptr<Policy> policy(const char* name, std::vector<uint32_t> weights, PolicyParams params = {}) {
  auto p = make_policy(name, params);
  EXPECT_TRUE(p);
  for (VmId vm = 0; vm < weights.size(); ++vm) EXPECT_TRUE((*p)->add_vm(vm + 1, weights[vm]));
  return std::move(*p);
}

inline void arrive(Policy& p, VmId vm, uint64_t t, uint32_t channel = 0) {
  ASSERT_TRUE(p.arrive(Submission{.vm = vm, .channel = channel}, t));
}

// Pick at `t`; expect a dispatch and run it for `len` ns. Returns its VM.
inline VmId run(Policy& p, uint64_t t, uint64_t len) {
  const Decision d = p.pick(t);
  EXPECT_TRUE(d.dispatch);
  if (!d.dispatch) return 0;
  p.complete(d.dispatch->vm, t, t + len);
  return d.dispatch->vm;
}

// One dispatch of a script: picked at `t`, run for `len` ns.
struct Slot {
  uint64_t t, len;
};

// Runs each slot in turn (run above): the VMs in the order they ran.
inline std::vector<VmId> run_each(Policy& p, std::span<const Slot> slots) {
  std::vector<VmId> order;
  for (const Slot& s : slots) order.push_back(run(p, s.t, s.len));
  return order;
}

// Three 3 ms kernels queued for each of vm 1 and vm 2 at 0, then four run
// back to back: the VMs in the order they ran.
inline std::vector<VmId> four_3ms_kernels_of_two_vms(Policy& p) {
  for (int i = 0; i < 3; ++i) {
    arrive(p, 1, 0);
    arrive(p, 2, 0);
  }
  std::vector<VmId> order;
  uint64_t t = 0;
  for (int i = 0; i < 4; ++i) {
    order.push_back(run(p, t, 3 * MS));
    t += 3 * MS;
  }
  return order;
}

// A scripted start shared by the yield tests: vm 2 runs 0-12 ms and
// 12-21 ms alone, so at the 20 ms boundary its measured utilization is
// 12/20 = 0.6 (over its share of 0.5) and its budget is 5 - 12 + 5 + 5 - 9
// = -6 ms: it is demoted. Then vm 1 runs 21-22 ms, and at 22 ms only vm 2
// has work queued. Periods of 10 ms.
inline std::unique_ptr<Policy> band_with_vm2_over_share(const char* name = "band") {
  auto p = policy(name, {1, 1}, P10);
  arrive(*p, 2, 0);
  EXPECT_EQ(run(*p, 0, 12 * MS), 2u);
  arrive(*p, 2, 12 * MS);
  EXPECT_EQ(run(*p, 12 * MS, 9 * MS), 2u);
  arrive(*p, 1, 21 * MS);
  arrive(*p, 2, 21 * MS);
  EXPECT_EQ(run(*p, 21 * MS, MS), 1u);
  return p;
}

}  // namespace vgpu::sched::testing
