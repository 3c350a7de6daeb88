// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/testing/two_vms.h"

#include <gtest/gtest.h>

#include "testbed/testing/testbeds.h"

namespace vgpu::mediator {

testbed::TestbedConfig two_fv_opt_vms(uint64_t vram_per_vm) {
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = vram_per_vm;
  return tc;
}

TwoVms open_two_vms(const testbed::TestbedConfig& tc, bool second_context_on_a) {
  TwoVms t;
  t.tb = testing::create_testbed(tc);
  if (!t.tb) return t;
  auto a = driver::Device::open(t.tb->port(0));
  auto b = driver::Device::open(t.tb->port(1));
  EXPECT_TRUE(a && b);
  if (!a || !b) return t;
  t.dev_a = std::move(*a);
  t.dev_b = std::move(*b);
  auto ca = t.dev_a->create_context();
  auto cb = t.dev_b->create_context();
  EXPECT_TRUE(ca && cb);
  if (ca) t.ctx_a = std::move(*ca);
  if (cb) t.ctx_b = std::move(*cb);
  if (second_context_on_a) {
    auto ca2 = t.dev_a->create_context();
    EXPECT_TRUE(ca2);
    if (ca2) t.ctx_a2 = std::move(*ca2);
  }
  return t;
}

}  // namespace vgpu::mediator
