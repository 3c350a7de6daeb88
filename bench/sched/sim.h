// SPDX-License-Identifier: GPL-2.0-or-later
// A discrete-event simulation in virtual time that drives the real
// scheduler (Dispatcher + Policy, inline mode) with simulated VMs issuing
// spin kernels to one simulated engine.
//
// VM model: a VM has one kernel outstanding at a time. When its kernel
// completes at t, it submits the next at t + gap_ns (the host's turnaround:
// completion interrupt, guest driver, doorbell, mediator) plus think_ns
// (0 for an always-busy VM; > 0 for an interactive VM such as the latency
// probe). The engine runs a kernel for exactly its length; with slice_ns
// it runs it as scheduler turns of at most slice_ns each (SliVER's kernel
// slicing, simulated: the next slice is queued as the last one ends, and
// the policy may run another VM's work in between). When the policy gives
// a turn a length (Submission::turn_ns), the turn goes on with the VM's
// next slices and kernels while that time lasts (SimConfig::turn_hold_ns).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "scheduler/policy.h"

namespace vgpu::bench {

struct SimVm {
  uint32_t weight = 1;
  uint64_t kernel_ns = 0;
  uint64_t think_ns = 0;  // 0: always busy
};

struct SimConfig {
  std::string policy;
  sched::PolicyParams params;
  std::vector<SimVm> vms;
  uint64_t duration_ns = 20'000'000'000;
  uint64_t gap_ns = 20'000;
  uint64_t sample_ns = 250'000'000;  // share-over-time window
  uint64_t slice_ns = 0;             // 0: a kernel is one turn
  // With slices and a policy that sizes turns (BAND with
  // PolicyParams::turn_ns, weighted turns): a turn goes on with the VM's
  // next slice, or its next kernel when it arrives within turn_hold_ns,
  // while the turn's time lasts, as the mediator's turns and turn hold do.
  uint64_t turn_hold_ns = 200'000;
};

struct SimVmResult {
  uint64_t gpu_ns = 0;                 // completed kernels' makespans
  std::vector<uint64_t> latencies_ns;  // completion - submission, per kernel
  std::vector<uint64_t> busy_per_sample_ns;
};

struct SimResult {
  uint64_t elapsed_ns = 0;  // up to the last completion
  std::vector<SimVmResult> vms;
  uint64_t dispatched = 0;
};

[[nodiscard]] Result<SimResult> simulate(const SimConfig& config);

}  // namespace vgpu::bench
