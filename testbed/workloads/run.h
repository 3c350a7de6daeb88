// SPDX-License-Identifier: GPL-2.0-or-later
// Runs one workload in a fresh testbed: the mode, the VM count and the
// device options the workload needs; every VM runs the workload at once.
// Counters are the vGPU's over the timed part alone (first timed launch to
// the last timed fence), taken in the VM's thread through on_timed: input
// uploads, bring-up and the output download are not in them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mediator/counters.h"
#include "testbed/workloads/workload.h"

namespace vgpu::testbed::workloads {

// The testbed's configuration (mode, VMs, the host's and the VMs'
// options: slice_blocks one value for every VM) and how the workload runs.
struct RunConfig : TestbedConfig {
  bool align_start = false;  // every VM's first timed launch waits for all VMs to reach theirs
  WorkloadOptions options;
};

struct VmRun {
  WorkloadResult result;
  std::optional<mediator::CounterSnapshot> counters;  // fv modes: the timed part's
  // fv modes: the host's turns over the whole run (set-up included; the
  // same on every VM's entry).
  std::optional<mediator::TurnCounts> host_turns;
};

// One VmRun per VM; an error when the testbed or any VM's workload failed.
[[nodiscard]] Result<std::vector<VmRun>> run_workload(const WorkloadSpec& spec, const RunConfig& config);

// after - before, field by field (reserved_bytes: after's).
mediator::CounterSnapshot counter_delta(const mediator::CounterSnapshot& after,
                                        const mediator::CounterSnapshot& before);

}  // namespace vgpu::testbed::workloads
