// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/shadow_space.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "common/text.h"
#include "shadow/entry.h"
#include "shadow/live_entries.h"

namespace vgpu::shadow {
namespace {

// Dirty tracking granularity: one guest page of a table.
constexpr uint64_t TRACK_PAGE = fmt::SMALL_PAGE;
constexpr uint64_t ENTRY_BYTES = 8;
constexpr uint64_t ENTRIES_PER_TRACK_PAGE = TRACK_PAGE / ENTRY_BYTES;
static_assert(fmt::PD.entry_bytes == ENTRY_BYTES && fmt::SPT.entry_bytes == ENTRY_BYTES &&
              fmt::LPT.entry_bytes == ENTRY_BYTES);
static_assert(fmt::TABLE_ALIGN == TRACK_PAGE, "tables start on tracked pages");

constexpr uint64_t ZERO_BLOCK = 512;  // entries (4 KiB)
// Directory scans of fewer entries (a lazy sync's one PDE a step) read
// each PDE without looking ahead.
constexpr uint32_t SKIP_FROM = 64;

// Whether the `count` (at most ZERO_BLOCK) entries of the shadow table at
// `table` from entry `first` are all 0 (no table: true), compared where
// they lie.
bool zero_entries(const gpu::Vram& vram, uint64_t table, uint64_t first, uint64_t count) {
  static constexpr uint64_t zeros[ZERO_BLOCK] = {};
  if (table == 0) return true;
  const uint64_t addr = table + first * ENTRY_BYTES, bytes = count * ENTRY_BYTES;
  if (count > ZERO_BLOCK || !vram.contains(addr, bytes)) return false;
  vram.host_access(addr, bytes, false);
  return std::memcmp(vram.data() + addr, zeros, bytes) == 0;
}
// A stretch of VA whose big-page and small-page shadow entries lie in one
// zero block each: 512 small pages (one 4 KiB block of a small-page table).
constexpr uint64_t EMPTY_SPAN = ZERO_BLOCK * fmt::SMALL_PAGE;
static_assert(EMPTY_SPAN % fmt::BIG_PAGE == 0 && fmt::PDE_SPAN % EMPTY_SPAN == 0);

// A shadow PTE naming system memory: not VRAM, so no BAR page maps it.
bool in_sysmem(uint64_t shadow_pte) {
  return fmt::pte::in_sysmem(static_cast<fmt::Target>(fmt::pte::Aperture::get(shadow_pte)));
}

}  // namespace

Result<std::unique_ptr<ShadowSpace>> ShadowSpace::create(const GuestMemory& guest, ReservedVram& reserved,
                                                         ShadowCounters& counters, uint64_t guest_pd) {
  if (guest_pd % fmt::TABLE_ALIGN != 0 || !guest.partition().contains(guest_pd, fmt::PD.table_bytes()))
    return fail(Errc::invalid_argument, strfmt("page directory %s does not lie in the VM's %s-byte VRAM",
                                               hex(guest_pd).c_str(), hex(guest.partition().size).c_str()));
  auto pd = reserved.alloc(fmt::PD.table_bytes());
  if (!pd) return fail(Errc::out_of_memory, "no reserved VRAM for the shadow of page directory " + hex(guest_pd));
  return std::unique_ptr<ShadowSpace>(new ShadowSpace(guest, reserved, counters, guest_pd, *pd, false));
}

ShadowSpace::ShadowSpace(const GuestMemory& guest, ReservedVram& reserved, ShadowCounters& counters, uint64_t guest_pd,
                         uint64_t shadow_pd, bool pv)
    : guest_(guest), reserved_(reserved), counters_(counters), guest_pd_(guest_pd), shadow_pd_(shadow_pd), pv_(pv) {
  if (!pv_) register_pages(TableRef{Kind::pd, 0, guest_pd_}, fmt::PD.table_bytes());
  synced_ = pv_;
}

ShadowSpace::~ShadowSpace() {
  for (auto& [pde, slot] : slots_) {
    if (slot.shadow_spt) reserved_.free(slot.shadow_spt);
    if (slot.shadow_lpt) reserved_.free(slot.shadow_lpt);
  }
  reserved_.free(shadow_pd_);
}

Status ShadowSpace::sync_full() {
  if (pv_) return {};
  std::lock_guard lock(mutex_);
  counters_.add(counters_.full_syncs);
  dirty_.clear();
  synced_ = true;
  work_ = Work{};
  return scan_pdes(0, static_cast<uint32_t>(fmt::PD.entries()), true);
}

Status ShadowSpace::sync_dirty() {
  bool done = false;
  return sync_dirty_until(std::numeric_limits<uint64_t>::max(), done);
}

uint64_t ShadowSpace::steady_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// A space never synced starts with a full scan; one with work left goes on
// with it; then the pages written since, until none is dirty.
Status ShadowSpace::sync_dirty_until(uint64_t until_ns, bool& done) {
  done = true;
  if (pv_) return {};
  std::lock_guard lock(mutex_);
  const std::optional<uint64_t> until = until_ns == std::numeric_limits<uint64_t>::max() ? std::nullopt
                                                                                         : std::optional(until_ns);
  Status status;
  if (!synced_) {
    counters_.add(counters_.full_syncs);
    dirty_.clear();
    synced_ = true;
    work_ = Work{.pde_next = 0, .pde_end = static_cast<uint32_t>(fmt::PD.entries()), .rescan = true};
  }
  for (;;) {
    if (!run_work(until, status)) {
      done = false;
      return status;
    }
    if (dirty_.empty()) return status;
    counters_.add(counters_.dirty_syncs);
    std::vector<uint64_t> pages(dirty_.begin(), dirty_.end());
    dirty_.clear();
    std::sort(pages.begin(), pages.end());
    work_.pages.assign(pages.begin(), pages.end());
  }
}

bool ShadowSpace::run_work(std::optional<uint64_t> until_ns, Status& status) {
  // Each piece does at least one step, so that every sync makes progress.
  bool stepped = false;
  const auto past = [&] { return stepped && until_ns && steady_now_ns() >= *until_ns; };
  for (;;) {
    while (work_.pde_next < work_.pde_end) {
      if (past()) return false;
      stepped = true;
      Status s = scan_pdes(work_.pde_next++, 1, work_.rescan);
      if (!s && status) status = s;
    }
    if (!work_.refs.empty()) {
      stepped = true;
      const TableRef ref = work_.refs.front();
      work_.refs.pop_front();
      rescan_ref(ref);
      continue;
    }
    if (work_.pages.empty()) return true;
    if (past()) return false;
    work_.page = work_.pages.front();
    work_.pages.pop_front();
    auto it = page_refs_.find(work_.page);
    if (it == page_refs_.end()) continue;  // the table went away since the write
    counters_.add(counters_.pages_rescanned);
    work_.refs.assign(it->second.begin(), it->second.end());  // scanning may re-register pages
  }
}

// One table of a dirty page: its entries in that page (a directory's
// become work_'s entries to scan).
void ShadowSpace::rescan_ref(const TableRef& ref) {
  const uint64_t first = (work_.page - ref.table_addr) / ENTRY_BYTES;
  if (ref.kind == Kind::pd) {
    const uint64_t count = std::min(ENTRIES_PER_TRACK_PAGE, fmt::PD.entries() - first);
    work_.pde_next = static_cast<uint32_t>(first);
    work_.pde_end = static_cast<uint32_t>(first + count);
    work_.rescan = false;
    return;
  }
  auto slot = slots_.find(ref.pde);
  if (slot == slots_.end()) return;
  const bool big = ref.kind == Kind::lpt;
  const uint64_t guest_table = big ? slot->second.guest_lpt : slot->second.guest_spt;
  const uint64_t shadow_table = big ? slot->second.shadow_lpt : slot->second.shadow_spt;
  if (guest_table != ref.table_addr || shadow_table == 0) return;
  const fmt::Level& level = big ? fmt::LPT : fmt::SPT;
  scan_entries(ref.kind, guest_table, shadow_table, first, std::min(ENTRIES_PER_TRACK_PAGE, level.entries() - first));
}

bool ShadowSpace::note_write(uint64_t gaddr) {
  const uint64_t page = align_down(gaddr, TRACK_PAGE);
  std::lock_guard lock(mutex_);
  if (!page_refs_.contains(page)) return false;
  dirty_.insert(page);
  return true;
}

bool ShadowSpace::dirty() const {
  std::lock_guard lock(mutex_);
  return !synced_ || !dirty_.empty() || !work_.idle();
}

std::vector<uint64_t> ShadowSpace::table_pages() const {
  std::lock_guard lock(mutex_);
  // Kept sorted until a table comes or goes: a naive mediator asks at
  // every TLB invalidate (its layout rebuild), and sorting each time cost
  // more than the copy.
  if (!sorted_pages_valid_) {
    sorted_pages_.clear();
    sorted_pages_.reserve(page_refs_.size());
    for (const auto& [page, refs] : page_refs_) sorted_pages_.push_back(page);
    std::sort(sorted_pages_.begin(), sorted_pages_.end());
    sorted_pages_valid_ = true;
  }
  return sorted_pages_;
}

void ShadowSpace::for_each_mapping(uint64_t va_begin, uint64_t va_end,
                                   const std::function<void(uint64_t, uint64_t, uint64_t, bool)>& fn) const {
  std::lock_guard lock(mutex_);
  const gpu::Vram& vram = guest_.vram();
  va_end = std::min(va_end, fmt::VA_LIMIT);
  uint64_t va = align_down(va_begin, fmt::SMALL_PAGE);
  while (va < va_end) {
    const uint32_t pde = static_cast<uint32_t>(fmt::PD.index(va));
    const uint64_t pde_end = std::min(align_down(va, fmt::PDE_SPAN) + fmt::PDE_SPAN, va_end);
    auto slot = slots_.find(pde);
    if (slot == slots_.end()) {
      va = pde_end;
      continue;
    }
    for (; va < pde_end;) {
      // No valid entry in either table for the next EMPTY_SPAN (a sparse
      // table's common case): its 512 small-page entries need no reads.
      if (va % EMPTY_SPAN == 0 && pde_end - va >= EMPTY_SPAN &&
          zero_entries(vram, slot->second.shadow_lpt, fmt::LPT.index(va), EMPTY_SPAN / fmt::BIG_PAGE) &&
          zero_entries(vram, slot->second.shadow_spt, fmt::SPT.index(va), EMPTY_SPAN / fmt::SMALL_PAGE)) {
        va += EMPTY_SPAN;
        continue;
      }
      const uint64_t big_start = align_down(va, fmt::BIG_PAGE);
      if (slot->second.shadow_lpt) {
        const uint64_t e = vram.read64(slot->second.shadow_lpt + fmt::LPT.index(va) * ENTRY_BYTES);
        if (fmt::pte::Valid::get(e)) {
          if (!in_sysmem(e)) fn(big_start, fmt::pte::addr(e), fmt::BIG_PAGE, fmt::pte::ReadOnly::get(e) != 0);
          va = big_start + fmt::BIG_PAGE;
          continue;
        }
      }
      const uint64_t big_end = std::min(big_start + fmt::BIG_PAGE, pde_end);
      if (slot->second.shadow_spt) {
        for (; va < big_end; va += fmt::SMALL_PAGE) {
          const uint64_t e = vram.read64(slot->second.shadow_spt + fmt::SPT.index(va) * ENTRY_BYTES);
          if (fmt::pte::Valid::get(e) && !in_sysmem(e))
            fn(va, fmt::pte::addr(e), fmt::SMALL_PAGE, fmt::pte::ReadOnly::get(e) != 0);
        }
      }
      va = big_end;
    }
  }
}

// The guest's and the shadow's directory entries [first, first + count)
// where they lie, for next_live (each told to the VRAM's observer first,
// as Vram::read does); nulls when a range does not lie in one piece.
ShadowSpace::EntryView ShadowSpace::pd_view(uint32_t first, uint32_t count) const {
  const uint64_t bytes = uint64_t{count} * ENTRY_BYTES;
  const uint64_t gfirst = guest_pd_ + uint64_t{first} * ENTRY_BYTES;
  const uint64_t sfirst = shadow_pd_ + uint64_t{first} * ENTRY_BYTES;
  gpu::Vram& vram = guest_.vram();
  if (!guest_.partition().contains(gfirst, bytes) || !vram.contains(guest_.partition().host(gfirst), bytes) ||
      !vram.contains(sfirst, bytes))
    return {};
  const uint64_t ghost = guest_.partition().host(gfirst);
  vram.host_access(ghost, bytes, false);
  vram.host_access(sfirst, bytes, false);
  return {reinterpret_cast<const uint64_t*>(vram.data() + ghost),
          reinterpret_cast<const uint64_t*>(vram.data() + sfirst)};
}

// A PDE whose guest and shadow entries are 0 and that has no slot has
// nothing to do: a PDE 0 has no table (target none), so the scan would
// attach nothing, detach nothing and write 0 over 0. A scan of many PDEs
// goes from one PDE that may have work to the next (next_live, and the
// slots, which attach and detach change only at the PDE in hand).
Status ShadowSpace::scan_pdes(uint32_t first, uint32_t count, bool rescan_tables) {
  Status status;
  uint64_t bad = 0;
  const EntryView view = count >= SKIP_FROM ? pd_view(first, count) : EntryView{};
  std::vector<uint32_t> slotted;
  if (view.guest) {
    for (const auto& [pde, slot] : slots_)
      if (pde >= first && pde - first < count) slotted.push_back(pde);
    std::sort(slotted.begin(), slotted.end());
  }
  auto next_slotted = slotted.begin();
  for (uint32_t i = first; i < first + count; ++i) {
    if (view.guest) {
      while (next_slotted != slotted.end() && *next_slotted < i) ++next_slotted;
      uint32_t next = first + static_cast<uint32_t>(next_live(view.guest, view.shadow, i - first, count));
      if (next_slotted != slotted.end()) next = std::min(next, *next_slotted);
      if (next >= first + count) break;
      i = next;
    }
    scan_pde(i, rescan_tables, status, bad);
  }
  counters_.add(counters_.entries_scanned, count);
  if (bad) counters_.add(counters_.bad_entries, bad);
  return status;
}

void ShadowSpace::scan_pde(uint32_t i, bool rescan_tables, Status& status, uint64_t& bad) {
  const Partition& part = guest_.partition();
  const uint64_t g = guest_.read64(guest_pd_ + uint64_t{i} * ENTRY_BYTES).value_or(0);
  const GuestTable spt = guest_spt(g, part);
  const GuestTable lpt = guest_lpt(g, part);
  bad += (spt.verdict == Verdict::rejected) + (lpt.verdict == Verdict::rejected);
  Status s1 = attach(i, Kind::spt, spt.guest_addr, rescan_tables);
  Status s2 = attach(i, Kind::lpt, lpt.guest_addr, rescan_tables);
  if (!s1 && status) status = s1;
  if (!s2 && status) status = s2;
  auto slot = slots_.find(i);
  const uint64_t shadow = slot == slots_.end() ? 0 : shadow_pde(slot->second.shadow_spt, slot->second.shadow_lpt);
  write_shadow(shadow_pd_ + uint64_t{i} * ENTRY_BYTES, shadow);
  if (slot != slots_.end() && slot->second.guest_spt == 0 && slot->second.guest_lpt == 0) slots_.erase(slot);
}

Status ShadowSpace::attach(uint32_t pde, Kind kind, uint64_t guest_table, bool rescan) {
  const bool big = kind == Kind::lpt;
  const fmt::Level& level = big ? fmt::LPT : fmt::SPT;
  {
    auto it = slots_.find(pde);
    const uint64_t current = it == slots_.end() ? 0 : (big ? it->second.guest_lpt : it->second.guest_spt);
    if (current == guest_table) {
      if (guest_table && rescan)
        scan_entries(kind, guest_table, big ? it->second.shadow_lpt : it->second.shadow_spt, 0, level.entries());
      return {};
    }
  }
  detach(pde, kind);
  if (guest_table == 0) return {};
  auto table = reserved_.alloc(level.table_bytes());
  if (!table)
    return fail(Errc::out_of_memory,
                strfmt("no reserved VRAM to shadow the %s at %s (PDE %u)", level.name, hex(guest_table).c_str(), pde));
  Slot& slot = slots_[pde];
  (big ? slot.guest_lpt : slot.guest_spt) = guest_table;
  (big ? slot.shadow_lpt : slot.shadow_spt) = *table;
  register_pages(TableRef{kind, pde, guest_table}, level.table_bytes());
  scan_entries(kind, guest_table, *table, 0, level.entries());
  return {};
}

void ShadowSpace::detach(uint32_t pde, Kind kind) {
  auto it = slots_.find(pde);
  if (it == slots_.end()) return;
  const bool big = kind == Kind::lpt;
  uint64_t& guest_table = big ? it->second.guest_lpt : it->second.guest_spt;
  uint64_t& shadow_table = big ? it->second.shadow_lpt : it->second.shadow_spt;
  if (guest_table == 0) return;
  unregister_pages(TableRef{kind, pde, guest_table}, (big ? fmt::LPT : fmt::SPT).table_bytes());
  reserved_.free(shadow_table);
  guest_table = 0;
  shadow_table = 0;
}

// A table's entries [first, first + count) and their shadows, in one loop.
// Every table attach() takes lies in the partition (guest_spt and
// guest_lpt refuse the others) and every shadow table in reserved VRAM; a
// range that still does not lie in one piece is read a word at a time, a
// guest entry outside the partition reading 0, as before.
void ShadowSpace::scan_entries(Kind kind, uint64_t guest_table, uint64_t shadow_table, uint64_t first, uint64_t count) {
  const fmt::PageSize size = kind == Kind::lpt ? fmt::PageSize::big : fmt::PageSize::small;
  const Partition& part = guest_.partition();
  gpu::Vram& vram = guest_.vram();
  const uint64_t gfirst = guest_table + first * ENTRY_BYTES, sfirst = shadow_table + first * ENTRY_BYTES;
  const uint64_t bytes = count * ENTRY_BYTES, ghost = part.host(gfirst);
  // A table inside the partition (every table the walker attaches) is
  // read where it lies, guest and shadow side, with the VRAM's observer told
  // of both ranges first (as Vram::read does): a full rescan (runlist
  // submit, raw bind) reads 32,768 entries a small-page table, most of them
  // invalid, and copying both sides into two new 256 KiB vectors (zeroed
  // first) cost more than the scan's own work. Only a range that does not
  // lie in one piece is copied, a word at a time.
  const uint64_t* guest = nullptr;
  const uint64_t* shadow = nullptr;
  std::vector<uint64_t> copies;
  if (gfirst % ENTRY_BYTES == 0 && part.contains(gfirst, bytes) && vram.contains(ghost, bytes) &&
      vram.contains(sfirst, bytes)) {
    vram.host_access(ghost, bytes, false);
    vram.host_access(sfirst, bytes, false);
    guest = reinterpret_cast<const uint64_t*>(vram.data() + ghost);
    shadow = reinterpret_cast<const uint64_t*>(vram.data() + sfirst);
  } else {
    copies.resize(2 * count);
    for (uint64_t i = 0; i < count; ++i) copies[i] = guest_.read64(gfirst + i * ENTRY_BYTES).value_or(0);
    for (uint64_t i = 0; i < count; ++i) copies[count + i] = vram.read64(sfirst + i * ENTRY_BYTES);
    guest = copies.data();
    shadow = copies.data() + count;
  }
  uint64_t bad = 0, writes = 0;
  // A zero guest entry over a zero shadow entry (an empty table's common
  // case: an entry 0 is invalid, its shadow 0) has nothing to write:
  // next_live goes from one entry that may to the next.
  for (uint64_t i = next_live(guest, shadow, 0, count); i < count; i = next_live(guest, shadow, i + 1, count)) {
    uint64_t g = 0, old = 0;  // one read of each: the guest may write its table meanwhile
    std::memcpy(&g, &guest[i], sizeof g);
    std::memcpy(&old, &shadow[i], sizeof old);
    const ShadowPte s = shadow_pte(g, size, part, guest_.ram());
    bad += s.verdict == Verdict::rejected;
    if (old == s.value) continue;
    vram.write64(sfirst + i * ENTRY_BYTES, s.value);
    ++writes;
  }
  counters_.add(counters_.entries_scanned, count);
  if (writes) counters_.add(counters_.shadow_writes, writes);
  if (bad) counters_.add(counters_.bad_entries, bad);
}

void ShadowSpace::write_shadow(uint64_t host_addr, uint64_t value) {
  gpu::Vram& vram = guest_.vram();
  if (vram.read64(host_addr) == value) return;
  vram.write64(host_addr, value);
  counters_.add(counters_.shadow_writes);
}

void ShadowSpace::register_pages(const TableRef& ref, uint64_t bytes) {
  sorted_pages_valid_ = false;
  for (uint64_t p = ref.table_addr; p < ref.table_addr + bytes; p += TRACK_PAGE) page_refs_[p].push_back(ref);
}

void ShadowSpace::unregister_pages(const TableRef& ref, uint64_t bytes) {
  for (uint64_t p = ref.table_addr; p < ref.table_addr + bytes; p += TRACK_PAGE) {
    auto it = page_refs_.find(p);
    if (it == page_refs_.end()) continue;
    std::erase(it->second, ref);
    if (!it->second.empty()) continue;
    page_refs_.erase(it);
    sorted_pages_valid_ = false;
  }
}

}  // namespace vgpu::shadow
