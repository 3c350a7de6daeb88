// SPDX-License-Identifier: GPL-2.0-or-later
// Test helper: drive a policy through a scripted case and record the order
// of dispatched VMs.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "scheduler/policy.h"

namespace vgpu::sched::testing {

constexpr uint64_t MS = 1'000'000;
constexpr uint64_t US = 1'000;

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

}  // namespace vgpu::sched::testing
