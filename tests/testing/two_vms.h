// SPDX-License-Identifier: GPL-2.0-or-later
// Two testbed VMs with a device and a context each, for the tests of
// turns and time isolation (tests/turn_test.cc, tests/fair_test.cc).
#pragma once

#include <memory>

#include "driver/runtime.h"
#include "testbed/testbed.h"

namespace vgpu::mediator {

struct TwoVms {
  std::unique_ptr<testbed::Testbed> tb;
  std::unique_ptr<driver::Device> dev_a, dev_b;
  std::unique_ptr<driver::Context> ctx_a, ctx_b;
  std::unique_ptr<driver::Context> ctx_a2;  // a second context of VM A, when asked for
};

// Two fv-opt VMs of `vram_per_vm` each; the rest (scheduler, turn-ms,
// slicing) the testbed's defaults.
testbed::TestbedConfig two_fv_opt_vms(uint64_t vram_per_vm = 128 * MiB);

// Creates the testbed `tc` (two VMs), opens both devices and a context on
// each, and a second one on VM A when `second_context_on_a`. A failure is
// a test failure, and the parts not made stay empty.
TwoVms open_two_vms(const testbed::TestbedConfig& tc, bool second_context_on_a = false);

}  // namespace vgpu::mediator
