// SPDX-License-Identifier: GPL-2.0-or-later
// A shadow-table flood beside a working VM (issue 37 item 5; the test
// tests/host_work_test.cc and `vgpu-bench hostwork`): VM 0 points every
// page-directory entry past its ring's at one small-page table, so the
// lazy sync before its next launch reads millions of entries, and
// launches; VM 1 runs small fills until VM 0's launch is done, each timed
// from launch to fence.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "mediator/turn.h"
#include "testbed/testbed.h"

namespace vgpu::mediator::attack {

// Where VM 1's slowest fill spent its time: in its launch (the driver's
// fill call, its doorbell included: a doorbell may run the dispatcher's
// step, and with it another VM's dispatch, on the caller's thread) or in
// the fence wait after it, and the host's turns that started meanwhile.
struct WorstFill {
  uint64_t launch_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t turns_started = 0;
  uint64_t host_work_turns = 0;  // of those, ended at their bound in a VM's sync
};

struct FloodResult {
  uint64_t worst_wait_ns = 0;    // VM 1's slowest fill while VM 0's sync ran
  WorstFill worst;               // that fill, split
  uint32_t fills = 0;            // VM 1's fills meanwhile
  uint64_t flood_ns = 0;         // VM 0's launch, from doorbell to fence
  uint64_t entries_scanned = 0;  // by VM 0's sync
  uint64_t slice_ns = 0;         // a piece of a sliced launch (Host::slice_ns)
  TurnCounts turns;
};

// `tc` with two VMs in a mediated mode (fv-opt: the lazy sync).
[[nodiscard]] Result<FloodResult> shadow_flood(const testbed::TestbedConfig& tc);

}  // namespace vgpu::mediator::attack
