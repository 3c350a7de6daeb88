// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/counters.h"

#include "common/text.h"

namespace vgpu::mediator {
namespace {
uint64_t get(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }
}  // namespace

CounterSnapshot snapshot(const Counters& c, uint64_t reserved_bytes) {
  return CounterSnapshot{get(c.trapped_reads),
                         get(c.trapped_writes),
                         get(c.tlb_invalidates),
                         get(c.faults),
                         get(c.guest_errors),
                         get(c.doorbells),
                         get(c.submissions),
                         get(c.layout_rebuilds),
                         get(c.interrupts),
                         get(c.shadow.entries_scanned),
                         get(c.shadow.shadow_writes),
                         get(c.shadow.pages_rescanned),
                         get(c.shadow.bad_entries),
                         get(c.shadow.full_syncs),
                         get(c.shadow.dirty_syncs),
                         reserved_bytes,
                         get(c.pv_batches),
                         get(c.pv_ops),
                         get(c.pv_failures),
                         get(c.slice_resumes),
                         get(c.rung_ahead)};
}

std::string CounterSnapshot::json() const {
  return strfmt(
      "{\"trapped_reads\": %lu, \"trapped_writes\": %lu, \"tlb_invalidates\": %lu, \"faults\": %lu, "
      "\"guest_errors\": %lu, \"doorbells\": %lu, \"submissions\": %lu, \"layout_rebuilds\": %lu, "
      "\"interrupts\": %lu, "
      "\"pte_scanned\": %lu, \"shadow_writes\": %lu, \"pages_rescanned\": %lu, \"bad_entries\": %lu, "
      "\"full_syncs\": %lu, \"dirty_syncs\": %lu, \"reserved_vram_bytes\": %lu, \"pv_batches\": %lu, "
      "\"pv_ops\": %lu, \"pv_failures\": %lu, \"slice_resumes\": %lu, \"rung_ahead\": %lu}",
      trapped_reads, trapped_writes, tlb_invalidates, faults, guest_errors, doorbells, submissions, layout_rebuilds,
      interrupts, entries_scanned, shadow_writes, pages_rescanned, bad_entries, full_syncs, dirty_syncs, reserved_bytes,
      pv_batches, pv_ops, pv_failures, slice_resumes, rung_ahead);
}

}  // namespace vgpu::mediator
