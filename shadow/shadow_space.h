// SPDX-License-Identifier: GPL-2.0-or-later
// A shadow address space: the physical page tables the GPU's MMU walks on
// behalf of one guest page directory. Shadow tables live in reserved VRAM
// and mirror the guest's, with every entry validated by shadow/entry.h.
//
// Two ways to bring it up to date:
//  - sync_full(): rescan the whole guest directory and every table (naive);
//  - sync_dirty(): rescan only the guest table pages written since the last
//    scan, as reported by note_write() from the trapped write paths (lazy).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "shadow/counters.h"
#include "shadow/guest_memory.h"
#include "shadow/reserved_vram.h"
#include "vgpu/formats.h"

namespace vgpu::shadow {

class ShadowSpace {
 public:
  // Fails if the guest page directory does not lie wholly in the partition
  // or reserved VRAM is exhausted. The space starts unsynchronized.
  static Result<std::unique_ptr<ShadowSpace>> create(const GuestMemory& guest, ReservedVram& reserved,
                                                     ShadowCounters& counters, uint64_t guest_pd);
  // A paravirtual space (spec §17): its entries come only from pv_write,
  // never from a scan of guest tables. It has no guest directory (guest_pd
  // 0), registers no guest page, and its sync_* do nothing.
  static Result<std::unique_ptr<ShadowSpace>> create_pv(const GuestMemory& guest, ReservedVram& reserved,
                                                        ShadowCounters& counters);
  ~ShadowSpace();
  ShadowSpace(const ShadowSpace&) = delete;
  ShadowSpace& operator=(const ShadowSpace&) = delete;

  uint64_t guest_pd() const { return guest_pd_; }
  uint64_t shadow_pd() const { return shadow_pd_; }  // host VRAM address

  // Naive: rescan everything. Fails only when reserved VRAM runs out (the
  // tables that could not be shadowed stay faulting).
  Status sync_full();
  // Lazy: rescan the dirty pages; a space never synced is synced in full.
  Status sync_dirty();
  // The same in pieces (issue 37: host work for a VM is bounded by its
  // turn): stops between two directory entries or two pages once the
  // steady clock (steady_now_ns) passes until_ns, with `done` false; the
  // next sync goes on where this one stopped. `done`: nothing is left.
  Status sync_dirty_until(uint64_t until_ns, bool& done);
  static uint64_t steady_now_ns();

  bool paravirtual() const { return pv_; }
  // PV only: sets the `count` PTEs of page size `ps` from `va` on, entry i
  // to pte(i) (0 clears; the caller validated every value). Creates shadow
  // tables on demand, all before the first write: on no_memory nothing is
  // written. Clearing never creates a table.
  Status pv_write(uint64_t va, uint64_t count, fmt::PageSize ps, const std::function<uint64_t(uint64_t)>& pte);

  // A guest write landed at guest VRAM address `gaddr`. Returns true when it
  // falls in one of this space's tables (the page is then dirty).
  bool note_write(uint64_t gaddr);
  bool dirty() const;

  // Guest VRAM pages (4 KiB, by address) holding this space's directory and
  // tables: the mediator keeps BAR mappings of them trapped.
  std::vector<uint64_t> table_pages() const;

  // Calls fn(va, host_phys, bytes, read_only) for every valid mapping in
  // [va_begin, va_end), big pages first where both exist (as the MMU does).
  void for_each_mapping(uint64_t va_begin, uint64_t va_end,
                        const std::function<void(uint64_t, uint64_t, uint64_t, bool)>& fn) const;

 private:
  enum class Kind : uint8_t { pd, spt, lpt };
  struct TableRef {
    Kind kind;
    uint32_t pde;         // index of the PDE owning the table (pd: unused)
    uint64_t table_addr;  // guest address of the table start
    bool operator==(const TableRef&) const = default;
  };
  struct Slot {
    uint64_t guest_spt = 0, guest_lpt = 0;    // guest table addresses (0 = none)
    uint64_t shadow_spt = 0, shadow_lpt = 0;  // host VRAM addresses (0 = none)
  };

  ShadowSpace(const GuestMemory& guest, ReservedVram& reserved, ShadowCounters& counters, uint64_t guest_pd,
              uint64_t shadow_pd, bool pv);
  Result<uint64_t> pv_table(uint32_t pde, fmt::PageSize ps, bool create);

  Status scan_pdes(uint32_t first, uint32_t count, bool rescan_tables);
  struct EntryView {
    const uint64_t* guest = nullptr;
    const uint64_t* shadow = nullptr;
  };
  EntryView pd_view(uint32_t first, uint32_t count) const;
  void scan_pde(uint32_t pde, bool rescan_tables, Status& status, uint64_t& bad);
  Status attach(uint32_t pde, Kind kind, uint64_t guest_table, bool rescan);
  void detach(uint32_t pde, Kind kind);
  void scan_entries(Kind kind, uint64_t guest_table, uint64_t shadow_table, uint64_t first, uint64_t count);
  void register_pages(const TableRef& ref, uint64_t bytes);
  void unregister_pages(const TableRef& ref, uint64_t bytes);
  void write_shadow(uint64_t host_addr, uint64_t value);

  GuestMemory guest_;
  ReservedVram& reserved_;
  ShadowCounters& counters_;
  const uint64_t guest_pd_;
  const uint64_t shadow_pd_;
  const bool pv_;

  mutable std::mutex mutex_;
  bool synced_ = false;
  // A sync's work not done yet: pages to rescan, and of the page in
  // progress its tables left and the directory entries left.
  struct Work {
    std::deque<uint64_t> pages;
    std::deque<TableRef> refs;
    uint64_t page = 0;
    uint32_t pde_next = 0, pde_end = 0;
    bool rescan = false;
    bool idle() const { return pages.empty() && refs.empty() && pde_next == pde_end; }
  };
  Work work_;
  // Runs work_ until it is done (true) or until_ns passes (false).
  bool run_work(std::optional<uint64_t> until_ns, Status& status);
  void rescan_ref(const TableRef& ref);
  std::unordered_map<uint32_t, Slot> slots_;                       // by PDE index
  std::unordered_map<uint64_t, std::vector<TableRef>> page_refs_;  // guest page -> tables in it
  mutable std::vector<uint64_t> sorted_pages_;                     // page_refs_'s keys, sorted (table_pages)
  mutable bool sorted_pages_valid_ = false;
  std::unordered_set<uint64_t> dirty_;  // guest pages
};

}  // namespace vgpu::shadow
