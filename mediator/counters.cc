// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/counters.h"

#include <nlohmann/json.hpp>

namespace vgpu::mediator {
namespace {
uint64_t get(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }
}  // namespace

CounterSnapshot snapshot(const Counters& c, uint64_t reserved_bytes) {
  return CounterSnapshot{get(c.trapped_reads),        get(c.trapped_writes),
                         get(c.tlb_invalidates),      get(c.faults),
                         get(c.guest_errors),         get(c.doorbells),
                         get(c.submissions),          get(c.layout_rebuilds),
                         get(c.interrupts),           get(c.shadow.entries_scanned),
                         get(c.shadow.shadow_writes), get(c.shadow.pages_rescanned),
                         get(c.shadow.bad_entries),   get(c.shadow.full_syncs),
                         get(c.shadow.dirty_syncs),   reserved_bytes,
                         get(c.pv_batches),           get(c.pv_ops),
                         get(c.pv_failures),          get(c.slice_resumes),
                         get(c.rung_ahead),           get(c.launches_moved_in)};
}

nlohmann::ordered_json CounterSnapshot::json() const {
  return {{"trapped_reads", trapped_reads},     {"trapped_writes", trapped_writes},
          {"tlb_invalidates", tlb_invalidates}, {"faults", faults},
          {"guest_errors", guest_errors},       {"doorbells", doorbells},
          {"submissions", submissions},         {"layout_rebuilds", layout_rebuilds},
          {"interrupts", interrupts},           {"pte_scanned", entries_scanned},
          {"shadow_writes", shadow_writes},     {"pages_rescanned", pages_rescanned},
          {"bad_entries", bad_entries},         {"full_syncs", full_syncs},
          {"dirty_syncs", dirty_syncs},         {"reserved_vram_bytes", reserved_bytes},
          {"pv_batches", pv_batches},           {"pv_ops", pv_ops},
          {"pv_failures", pv_failures},         {"slice_resumes", slice_resumes},
          {"rung_ahead", rung_ahead},           {"launches_moved_in", launches_moved_in}};
}

}  // namespace vgpu::mediator
