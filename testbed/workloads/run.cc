// SPDX-License-Identifier: GPL-2.0-or-later
#include "testbed/workloads/run.h"

#include <barrier>

namespace vgpu::testbed::workloads {

mediator::CounterSnapshot counter_delta(const mediator::CounterSnapshot& a, const mediator::CounterSnapshot& b) {
  return mediator::CounterSnapshot{a.trapped_reads - b.trapped_reads,
                                   a.trapped_writes - b.trapped_writes,
                                   a.tlb_invalidates - b.tlb_invalidates,
                                   a.faults - b.faults,
                                   a.guest_errors - b.guest_errors,
                                   a.doorbells - b.doorbells,
                                   a.submissions - b.submissions,
                                   a.layout_rebuilds - b.layout_rebuilds,
                                   a.interrupts - b.interrupts,
                                   a.entries_scanned - b.entries_scanned,
                                   a.shadow_writes - b.shadow_writes,
                                   a.pages_rescanned - b.pages_rescanned,
                                   a.bad_entries - b.bad_entries,
                                   a.full_syncs - b.full_syncs,
                                   a.dirty_syncs - b.dirty_syncs,
                                   a.reserved_bytes,
                                   a.pv_batches - b.pv_batches,
                                   a.pv_ops - b.pv_ops,
                                   a.pv_failures - b.pv_failures,
                                   a.slice_resumes - b.slice_resumes,
                                   a.rung_ahead - b.rung_ahead};
}

Result<std::vector<VmRun>> run_workload(const WorkloadSpec& spec, const RunConfig& config) {
  TestbedConfig tc = config;
  if (spec.direct_transfer_max >= 0) tc.device.direct_transfer_max = static_cast<uint64_t>(spec.direct_transfer_max);
  auto tb = Testbed::create(tc);
  if (!tb) return std::unexpected(tb.error().context(std::string(spec.name)));
  Testbed& bed = **tb;
  std::vector<VmRun> runs(config.vms);
  std::barrier start(static_cast<std::ptrdiff_t>(config.vms));
  const auto statuses = bed.run([&](Vm& vm) -> Status {
    std::optional<mediator::CounterSnapshot> before, after;
    WorkloadOptions options = config.options;
    bool arrived = !config.align_start;
    options.on_timed = [&](bool begin) {
      if (begin && !arrived) {
        arrived = true;
        start.arrive_and_wait();
      }
      (begin ? before : after) = bed.counters(vm.index);
    };
    auto r = spec.fn(vm, options);
    if (!arrived) start.arrive_and_drop();  // failed before its timed part: the others go on
    if (!r) return std::unexpected(r.error());
    runs[vm.index].result = std::move(*r);
    if (before && after) runs[vm.index].counters = counter_delta(*after, *before);
    return {};
  });
  for (const auto& s : statuses)
    if (!s) return std::unexpected(s.error().context(std::string(spec.name) + " (" + mode_name(config.mode) + ")"));
  if (const mediator::Host* host = bed.host())
    for (VmRun& r : runs) r.host_turns = host->turn_counts();
  return runs;
}

}  // namespace vgpu::testbed::workloads
