// SPDX-License-Identifier: GPL-2.0-or-later
// Per-vGPU counters, readable through the mediator's API (Vgpu::counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "shadow/counters.h"

namespace vgpu::mediator {

struct Counters {
  std::atomic<uint64_t> trapped_reads{0};  // BAR0/BAR1/BAR3 reads handled by the mediator
  std::atomic<uint64_t> trapped_writes{0};
  std::atomic<uint64_t> tlb_invalidates{0};  // guest TLB invalidates (registers or MEM_OP)
  std::atomic<uint64_t> faults{0};           // faults and channel errors reported to the VM
  std::atomic<uint64_t> guest_errors{0};     // misbehaviour logged (bad register, bad value)
  std::atomic<uint64_t> doorbells{0};        // GP_PUT writes
  std::atomic<uint64_t> submissions{0};      // dispatched to the physical GPU by the scheduler
  std::atomic<uint64_t> layout_rebuilds{0};  // BAR remap layouts recomputed
  std::atomic<uint64_t> interrupts{0};       // interrupt messages sent to the VM (spec §11.6)
  std::atomic<uint64_t> pv_batches{0};       // PV hypercall batches run (spec §17)
  std::atomic<uint64_t> pv_ops{0};           // PV operations run
  std::atomic<uint64_t> pv_failures{0};      // PV batches that ended with an error
  std::atomic<uint64_t> slice_resumes{0};    // launches resumed after stopping at a slice boundary (spec §10.5)
  std::atomic<uint64_t> rung_ahead{0};  // entries rung behind a piece still on the GPU (ShadowChannels::ring_ahead)
  // Launches an import took up between two pieces (docs/migration.md §19).
  std::atomic<uint64_t> launches_moved_in{0};
  shadow::ShadowCounters shadow;

  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
};

struct CounterSnapshot {
  uint64_t trapped_reads, trapped_writes, tlb_invalidates, faults, guest_errors, doorbells, submissions,
      layout_rebuilds, interrupts;
  uint64_t entries_scanned, shadow_writes, pages_rescanned, bad_entries, full_syncs, dirty_syncs;
  uint64_t reserved_bytes;  // hypervisor-reserved VRAM this vGPU's shadows use
  uint64_t pv_batches = 0, pv_ops = 0, pv_failures = 0;
  uint64_t slice_resumes = 0;
  uint64_t rung_ahead = 0;
  uint64_t launches_moved_in = 0;

  uint64_t trapped() const { return trapped_reads + trapped_writes; }
  // Every counter as one JSON object, in the order above (vgpuctl stats, the C API's counters).
  nlohmann::ordered_json json() const;
};

CounterSnapshot snapshot(const Counters& c, uint64_t reserved_bytes);

}  // namespace vgpu::mediator
