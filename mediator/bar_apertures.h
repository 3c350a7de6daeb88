// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's BAR1 and BAR3: each a shadowed address space (the guest's BAR
// page tables, through shadow/), the per-page list of host VRAM behind it,
// and the BAR remap layout: which runs of BAR pages may be mapped straight
// onto VRAM, and which stay trapped (the USERD doorbells, and every page
// holding a page table of the VM). The layout generation moves whenever
// the layout may have changed, as a BAR TLB invalidate would make a BAR
// reload (docs/mediator.md, "BAR remap").
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/error.h"
#include "gpu/gpu.h"
#include "shadow/counters.h"
#include "shadow/guest_memory.h"
#include "shadow/reserved_vram.h"
#include "shadow/shadow_space.h"

namespace vgpu::mediator {

// A run of BAR pages mapped straight onto host VRAM (BAR remap).
struct DirectRange {
  uint64_t bar_offset;
  uint64_t vram_addr;
  uint64_t bytes;
  bool read_only;
};

class BarApertures {
 public:
  static constexpr uint64_t PAGE = 4096;

  BarApertures(const shadow::GuestMemory& guest, shadow::ReservedVram& pool, shadow::ShadowCounters& counters,
               uint64_t bar1_size, uint64_t bar3_size);

  uint64_t size(gpu::Bar bar) const { return bar == gpu::Bar::bar1 ? bar1_.size : bar3_.size; }
  uint32_t inst_reg(gpu::Bar bar) const { return state(bar).inst_reg; }
  uint64_t inst_addr(gpu::Bar bar) const;
  bool has_space(gpu::Bar bar) const { return state(bar).space != nullptr; }
  uint64_t guest_pd(gpu::Bar bar) const { return state(bar).space ? state(bar).space->guest_pd() : 0; }

  // BAR1_INST/BAR3_INST written: the BAR's address space is replaced (not
  // synced yet). Fails when the instance block or its directory lies
  // outside the partition, or the pool is exhausted: the BAR maps nothing.
  [[nodiscard]] Status set_inst(gpu::Bar bar, uint32_t value);
  // Where a paravirtual space named by a guest directory is found (spec
  // §17): set_inst uses it instead of shadowing the guest's tables.
  void set_pv_lookup(std::function<std::shared_ptr<shadow::ShadowSpace>(uint64_t)> lookup) {
    pv_lookup_ = std::move(lookup);
  }
  // Whether the BAR's space is `space` (the PV server resyncs it after a batch).
  bool uses(gpu::Bar bar, const shadow::ShadowSpace* space) const { return state(bar).space.get() == space; }
  // Refresh the page list for BAR offsets [offset, offset + bytes) only
  // (a PV batch changed those entries; the shadow needs no sync).
  void sync_range(gpu::Bar bar, uint64_t offset, uint64_t bytes);
  // Bring the BAR's shadow and page list up to date.
  [[nodiscard]] Status sync(gpu::Bar bar, bool full);

  // What a trapped access at `offset` reaches: host VRAM and whether the
  // page is read-only; none when nothing maps it. `beyond_limit`: the
  // offset is beyond the BAR or its instance block's limit.
  struct Page {
    uint64_t host;
    bool read_only;
  };
  std::optional<Page> translate(gpu::Bar bar, uint64_t offset) const;
  bool beyond_limit(gpu::Bar bar, uint64_t offset) const;

  // The trapped table pages: `table_pages` lists the guest pages holding a
  // table of any of the VM's channel spaces; the BAR spaces' own are added
  // here. Returns the pages that became trapped (mapped directly until now:
  // they may have been written unseen), or none when nothing changed: the
  // generation moves when the set changed or `pages_changed` says a BAR's
  // pages did.
  std::optional<std::vector<uint64_t>> rebuild(std::vector<uint64_t> table_pages, bool pages_changed);
  bool trapped_table_page(uint64_t guest_page) const;
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Runs of BAR pages that may be mapped straight onto VRAM: every mapped
  // page but the trapped table pages and the BAR1 pages in [userd_begin,
  // userd_end) (the doorbells).
  std::vector<DirectRange> direct_ranges(gpu::Bar bar, uint64_t userd_begin, uint64_t userd_end) const;

  // A trapped guest write: mark the BAR spaces' tables dirty.
  void note_write(uint64_t gaddr) const;

  void reset();

 private:
  struct State {
    uint64_t size = 0;
    uint32_t inst_reg = 0;
    std::shared_ptr<shadow::ShadowSpace> space;
    uint64_t limit = 0;
    std::vector<uint64_t> pages;  // per 4 KiB BAR page: host VRAM address | flags, or NO_PAGE
  };
  static void clear_pages(State& st);  // every page of the BAR NO_PAGE
  State& state(gpu::Bar bar) { return bar == gpu::Bar::bar1 ? bar1_ : bar3_; }
  const State& state(gpu::Bar bar) const { return bar == gpu::Bar::bar1 ? bar1_ : bar3_; }

  const shadow::GuestMemory& guest_;
  shadow::ReservedVram& pool_;
  shadow::ShadowCounters& counters_;
  State bar1_, bar3_;
  std::function<std::shared_ptr<shadow::ShadowSpace>(uint64_t)> pv_lookup_;
  std::vector<uint64_t> trapped_pages_;  // guest VRAM pages (sorted) that hold tables
  std::atomic<uint64_t> generation_{1};
};

}  // namespace vgpu::mediator
