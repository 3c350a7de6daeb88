// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/bar_apertures.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "common/text.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {
namespace {

namespace pbus = regs::pbus;
constexpr uint64_t NO_PAGE = ~uint64_t{0};
constexpr uint64_t PAGE_READ_ONLY = 1;  // low bit of a page entry (addresses are page aligned)
constexpr size_t NO_PAGE_BLOCK = 512;
constexpr auto NO_PAGES = [] {
  std::array<uint64_t, NO_PAGE_BLOCK> a{};
  a.fill(NO_PAGE);
  return a;
}();
static_assert(BarApertures::PAGE == fmt::SMALL_PAGE);

static_assert(NO_PAGE == ~uint64_t{0}, "BarApertures::clear_pages sets every byte");

}  // namespace

BarApertures::BarApertures(const shadow::GuestMemory& guest, shadow::ReservedVram& pool,
                           shadow::ShadowCounters& counters, uint64_t bar1_size, uint64_t bar3_size)
    : guest_(guest), pool_(pool), counters_(counters) {
  bar1_.size = bar1_size;
  bar3_.size = bar3_size;
}

// One memset (NO_PAGE is all ones), not a loop over BAR1's 65,536 pages at
// every sync.
void BarApertures::clear_pages(State& st) {
  st.pages.resize(st.size / PAGE);
  std::memset(st.pages.data(), 0xff, st.pages.size() * sizeof(uint64_t));
}

uint64_t BarApertures::inst_addr(gpu::Bar bar) const {
  return uint64_t{pbus::BarInstAddr::get(state(bar).inst_reg)} << pbus::BAR_INST_SHIFT;
}

Status BarApertures::set_inst(gpu::Bar bar, uint32_t value) {
  State& st = state(bar);
  const uint64_t size = st.size;
  st = State{};
  st.size = size;
  st.inst_reg = value;
  if (!pbus::BarInstMode::get(value)) return {};
  const uint64_t inst = inst_addr(bar);
  if (pbus::BarInstTarget::get(value) != uint32_t(fmt::Target::vram) ||
      !guest_.partition().contains(inst, regs::inst::SIZE))
    return fail(Errc::invalid_argument, "instance block " + hex(inst) + " outside the VM's VRAM");
  const fmt::AddressSpace as = fmt::decode_address_space(guest_.reader(inst));
  if (auto pv = pv_lookup_ ? pv_lookup_(as.pdb) : nullptr) {
    st.space = std::move(pv);
    st.limit = as.limit;
    return {};
  }
  auto space = shadow::ShadowSpace::create(guest_, pool_, counters_, as.pdb);
  if (!space) return std::unexpected(space.error());
  st.space = std::move(*space);
  st.limit = as.limit;
  return {};
}

Status BarApertures::sync(gpu::Bar bar, bool full) {
  State& st = state(bar);
  if (!st.space) return {};
  Status s = full ? st.space->sync_full() : st.space->sync_dirty();
  clear_pages(st);
  const uint64_t end = std::min(st.size, st.limit == ~uint64_t{0} ? st.size : st.limit + 1);
  st.space->for_each_mapping(0, end, [&](uint64_t va, uint64_t phys, uint64_t bytes, bool ro) {
    for (uint64_t off = 0; off < bytes && va + off < end; off += PAGE)
      st.pages[(va + off) / PAGE] = (phys + off) | (ro ? PAGE_READ_ONLY : 0);
  });
  return s;
}

void BarApertures::sync_range(gpu::Bar bar, uint64_t offset, uint64_t bytes) {
  State& st = state(bar);
  if (!st.space) return;
  const uint64_t end_all = std::min(st.size, st.limit == ~uint64_t{0} ? st.size : st.limit + 1);
  if (st.pages.size() != st.size / PAGE) clear_pages(st);
  if (offset >= end_all) return;
  const uint64_t begin = offset - offset % PAGE;
  const uint64_t end = std::min(end_all, bytes > end_all - offset ? end_all : offset + bytes);
  for (uint64_t p = begin / PAGE; p < (end + PAGE - 1) / PAGE; ++p) st.pages[p] = NO_PAGE;
  st.space->for_each_mapping(begin, end, [&](uint64_t va, uint64_t phys, uint64_t len, bool ro) {
    for (uint64_t off = 0; off < len && va + off < end_all; off += PAGE)
      st.pages[(va + off) / PAGE] = (phys + off) | (ro ? PAGE_READ_ONLY : 0);
  });
}

std::optional<BarApertures::Page> BarApertures::translate(gpu::Bar bar, uint64_t offset) const {
  const State& st = state(bar);
  const uint64_t page = offset / PAGE;
  if (page >= st.pages.size() || st.pages[page] == NO_PAGE) return std::nullopt;
  return Page{(st.pages[page] & ~PAGE_READ_ONLY) + offset % PAGE, (st.pages[page] & PAGE_READ_ONLY) != 0};
}

bool BarApertures::beyond_limit(gpu::Bar bar, uint64_t offset) const {
  const State& st = state(bar);
  return offset >= st.size || (st.space && offset > st.limit);
}

std::optional<std::vector<uint64_t>> BarApertures::rebuild(std::vector<uint64_t> pages, bool pages_changed) {
  for (const State* st : {&bar1_, &bar3_}) {
    if (!st->space) continue;
    auto t = st->space->table_pages();
    pages.insert(pages.end(), t.begin(), t.end());
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  if (!pages_changed && pages == trapped_pages_) return std::nullopt;
  std::vector<uint64_t> added;
  std::set_difference(pages.begin(), pages.end(), trapped_pages_.begin(), trapped_pages_.end(),
                      std::back_inserter(added));
  trapped_pages_ = std::move(pages);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return added;
}

bool BarApertures::trapped_table_page(uint64_t guest_page) const {
  return std::binary_search(trapped_pages_.begin(), trapped_pages_.end(), guest_page);
}

std::vector<DirectRange> BarApertures::direct_ranges(gpu::Bar bar, uint64_t userd_begin, uint64_t userd_end) const {
  std::vector<DirectRange> out;
  const State& st = state(bar);
  const uint64_t base = guest_.partition().base;
  for (uint64_t i = 0; i < st.pages.size(); ++i) {
    // A BAR maps few of its pages (BAR1: 65,536): whole blocks of unmapped
    // pages are skipped with one memcmp each.
    if (i % NO_PAGE_BLOCK == 0 && st.pages.size() - i >= NO_PAGE_BLOCK &&
        std::memcmp(&st.pages[i], NO_PAGES.data(), sizeof NO_PAGES) == 0) {
      i += NO_PAGE_BLOCK - 1;
      continue;
    }
    if (st.pages[i] == NO_PAGE) continue;
    const uint64_t host = st.pages[i] & ~PAGE_READ_ONLY;
    const bool ro = st.pages[i] & PAGE_READ_ONLY;
    const uint64_t off = i * PAGE;
    if ((bar == gpu::Bar::bar1 && off >= userd_begin && off < userd_end) || trapped_table_page(host - base)) continue;
    if (!out.empty() && out.back().bar_offset + out.back().bytes == off &&
        out.back().vram_addr + out.back().bytes == host && out.back().read_only == ro)
      out.back().bytes += PAGE;
    else
      out.push_back(DirectRange{off, host, PAGE, ro});
  }
  return out;
}

void BarApertures::note_write(uint64_t gaddr) const {
  for (const State* st : {&bar1_, &bar3_})
    if (st->space) st->space->note_write(gaddr);
}

void BarApertures::reset() {
  for (State* st : {&bar1_, &bar3_}) {
    const uint64_t size = st->size;
    *st = State{};
    st->size = size;
  }
}

}  // namespace vgpu::mediator
