// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's BAR1 and BAR3 and the PRAMIN window. The guest's BAR page
// tables are shadowed like any address space; the shadow gives, per 4 KiB
// BAR page, the host VRAM behind it. With BAR remap, pages that hold no
// sensitive state are mapped straight into the VM (direct_ranges); pages
// holding the guest's page tables and the USERD doorbells stay trapped and
// land here. The layout follows the guest's BAR TLB invalidates, as a BAR
// TLB would.
#include <algorithm>

#include "common/text.h"
#include "mediator/host.h"
#include "mediator/vgpu.h"

namespace vgpu::mediator {
namespace {

namespace pbus = regs::pbus;
constexpr uint64_t BAR_PAGE = fmt::SMALL_PAGE;
constexpr uint64_t NO_PAGE = ~uint64_t{0};
constexpr uint64_t PAGE_READ_ONLY = 1;   // low bit of a page entry (addresses are page aligned)

regs::FaultUnit fault_unit(gpu::Bar bar) { return bar == gpu::Bar::bar1 ? regs::FaultUnit::bar1 : regs::FaultUnit::bar3; }
const char* bar_name(gpu::Bar bar) { return bar == gpu::Bar::bar1 ? "BAR1" : "BAR3"; }

}  // namespace

void Vgpu::write_bar_inst(gpu::Bar bar, uint32_t value) {
  BarState& st = bar_state(bar);
  st = BarState{};
  st.inst_reg = value;
  if (pbus::BarInstMode::get(value)) {
    const uint64_t inst = uint64_t{pbus::BarInstAddr::get(value)} << pbus::BAR_INST_SHIFT;
    const shadow::Partition& part = guest_.partition();
    const fmt::AddressSpace as = fmt::decode_address_space(guest_.reader(inst));
    auto space = pbus::BarInstTarget::get(value) == uint32_t(fmt::Target::vram) && part.contains(inst, regs::inst::SIZE)
                     ? shadow::ShadowSpace::create(guest_, *reserved_, counters_.shadow, as.pdb)
                     : fail(Errc::invalid_argument, "instance block " + hex(inst) + " outside the VM's VRAM");
    if (!space) {
      guest_error(strfmt("%s: %s", bar_name(bar), space.error().message.c_str()));
      record_fault(fault_unit(bar), regs::FaultReason::pt_not_present, inst, 0, false, std::nullopt);
    } else {
      st.space = std::move(*space);
      st.limit = as.limit;
      sync_bar(bar, true);
    }
  }
  rebuild_layout(true);
}

void Vgpu::sync_bar(gpu::Bar bar, bool full) {
  BarState& st = bar_state(bar);
  if (!st.space) return;
  Status s = full ? st.space->sync_full() : st.space->sync_dirty();
  if (!s) guest_error(strfmt("%s shadow sync: %s", bar_name(bar), s.error().message.c_str()));
  const uint64_t size = bar_size(bar);
  st.pages.assign(size / BAR_PAGE, NO_PAGE);
  const uint64_t end = std::min(size, st.limit == ~uint64_t{0} ? size : st.limit + 1);
  st.space->for_each_mapping(0, end, [&](uint64_t va, uint64_t phys, uint64_t bytes, bool ro) {
    for (uint64_t off = 0; off < bytes && va + off < end; off += BAR_PAGE)
      st.pages[(va + off) / BAR_PAGE] = (phys + off) | (ro ? PAGE_READ_ONLY : 0);
  });
}

void Vgpu::rebuild_layout(bool pages_changed) {
  std::vector<uint64_t> pages;
  auto add = [&](const shadow::ShadowSpace& s) {
    auto t = s.table_pages();
    pages.insert(pages.end(), t.begin(), t.end());
  };
  for (auto& [pd, weak] : spaces_)
    if (auto space = weak.lock()) add(*space);
  for (const BarState* st : {&bar1_, &bar3_})
    if (st->space) add(*st->space);
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  if (!pages_changed && pages == sensitive_pages_) return;
  // A table page that was directly mapped until now may have been written
  // through that mapping unseen: rescan it at the next sync.
  std::vector<uint64_t> added;
  std::set_difference(pages.begin(), pages.end(), sensitive_pages_.begin(), sensitive_pages_.end(),
                      std::back_inserter(added));
  sensitive_pages_ = std::move(pages);
  for (uint64_t p : added) note_guest_write(p);
  Counters::bump(counters_.layout_rebuilds);
  layout_generation_.fetch_add(1, std::memory_order_acq_rel);
}

bool Vgpu::sensitive_bar_page(gpu::Bar bar, uint64_t bar_offset) const {
  if (bar != gpu::Bar::bar1 || !regs::pfifo::UserdBaseEnable::get(userd_base_)) return false;
  const uint64_t base = uint64_t{regs::pfifo::UserdBaseAddr::get(userd_base_)} << regs::pfifo::USERD_BASE_SHIFT;
  return bar_offset >= base && bar_offset - base < uint64_t{config_.channels} * regs::userd::SIZE;
}

std::vector<DirectRange> Vgpu::direct_ranges(gpu::Bar bar) const {
  MediatorLock lock(mutex_);
  std::vector<DirectRange> out;
  if (!config_.bar_remap) return out;
  const BarState& st = bar_state(bar);
  const uint64_t base = guest_.partition().base;
  for (uint64_t i = 0; i < st.pages.size(); ++i) {
    if (st.pages[i] == NO_PAGE) continue;
    const uint64_t host = st.pages[i] & ~PAGE_READ_ONLY;
    const bool ro = st.pages[i] & PAGE_READ_ONLY;
    const uint64_t off = i * BAR_PAGE;
    if (sensitive_bar_page(bar, off) ||
        std::binary_search(sensitive_pages_.begin(), sensitive_pages_.end(), host - base))
      continue;
    if (!out.empty() && out.back().bar_offset + out.back().bytes == off &&
        out.back().vram_addr + out.back().bytes == host && out.back().read_only == ro)
      out.back().bytes += BAR_PAGE;
    else
      out.push_back(DirectRange{off, host, BAR_PAGE, ro});
  }
  return out;
}

void Vgpu::note_guest_write(uint64_t gaddr) {
  if (!config_.lazy_shadow) return;   // naive mode rescans everything anyway
  const uint64_t page = align_down(gaddr, BAR_PAGE);
  if (!std::binary_search(sensitive_pages_.begin(), sensitive_pages_.end(), page)) return;
  for (auto& [pd, weak] : spaces_)
    if (auto space = weak.lock()) space->note_write(gaddr);
  for (BarState* st : {&bar1_, &bar3_})
    if (st->space) st->space->note_write(gaddr);
}

bool Vgpu::userd_slot(uint64_t bar1_offset, uint32_t& gchid, uint32_t& field) const {
  if (!sensitive_bar_page(gpu::Bar::bar1, bar1_offset)) return false;
  const uint64_t base = uint64_t{regs::pfifo::UserdBaseAddr::get(userd_base_)} << regs::pfifo::USERD_BASE_SHIFT;
  gchid = static_cast<uint32_t>((bar1_offset - base) / regs::userd::SIZE);
  field = static_cast<uint32_t>((bar1_offset - base) % regs::userd::SIZE);
  return true;
}

// An access the BAR does not translate: beyond the BAR or its instance
// block's limit (vm_limit_exceeded, as the MMU checks the limit first),
// or on a page nothing maps (page_not_present).
void Vgpu::bar_fault(gpu::Bar bar, uint64_t offset, bool write) {
  const BarState& st = bar_state(bar);
  const bool beyond = offset >= bar_size(bar) || (st.space && offset > st.limit);
  guest_error(strfmt("%s %s at %s: %s", bar_name(bar), write ? "write" : "read", hex(offset).c_str(),
                     beyond ? "beyond the BAR's limit" : "no page mapped"));
  const uint64_t inst = uint64_t{pbus::BarInstAddr::get(st.inst_reg)} << pbus::BAR_INST_SHIFT;
  record_fault(fault_unit(bar), beyond ? regs::FaultReason::vm_limit_exceeded : regs::FaultReason::page_not_present,
               inst, offset, write, std::nullopt);
  pbus_intr_ |= pbus::IntrMmioFault::mask;
  update_interrupt_line();
}

uint32_t Vgpu::bar_read32(gpu::Bar bar, uint64_t offset) {
  Counters::bump(counters_.trapped_reads);
  uint32_t value = ~uint32_t{0};
  locked([&] {
    const BarState& st = bar_state(bar);
    const uint64_t page = offset / BAR_PAGE;
    uint32_t gchid = 0, field = 0;
    if (offset % sizeof(uint32_t) != 0 || bar == gpu::Bar::bar0) {
      guest_error(strfmt("%s read at misaligned offset %s", bar_name(bar), hex(offset).c_str()));
    } else if (page >= st.pages.size() || st.pages[page] == NO_PAGE) {
      bar_fault(bar, offset, false);
    } else if (bar == gpu::Bar::bar1 && userd_slot(offset, gchid, field) && gchid < channels_.size() &&
               channels_[gchid].bound && field != regs::userd::GP_PUT) {
      // What the GPU publishes (GP_GET, GET, REF, ...) comes from the
      // physical channel's USERD page, so it is always current.
      value = host_.gpu().vram().read32(host_.host_userd(pchid_base_ + gchid) + field);
    } else {
      value = host_.gpu().vram().read32((st.pages[page] & ~PAGE_READ_ONLY) + offset % BAR_PAGE);
    }
  });
  return value;
}

void Vgpu::bar_write32(gpu::Bar bar, uint64_t offset, uint32_t value) {
  Counters::bump(counters_.trapped_writes);
  locked([&] {
    const BarState& st = bar_state(bar);
    const uint64_t page = offset / BAR_PAGE;
    if (offset % sizeof(uint32_t) != 0 || bar == gpu::Bar::bar0) {
      guest_error(strfmt("%s write at misaligned offset %s", bar_name(bar), hex(offset).c_str()));
    } else if (page >= st.pages.size() || st.pages[page] == NO_PAGE) {
      bar_fault(bar, offset, true);
    } else if (st.pages[page] & PAGE_READ_ONLY) {
      guest_error(strfmt("%s write at %s: read-only page", bar_name(bar), hex(offset).c_str()));
      record_fault(fault_unit(bar), regs::FaultReason::page_read_only, 0, offset, true, std::nullopt);
    } else {
      const uint64_t host = (st.pages[page] & ~PAGE_READ_ONLY) + offset % BAR_PAGE;
      host_.gpu().vram().write32(host, value);
      note_guest_write(host - guest_.partition().base);
      uint32_t gchid = 0, field = 0;
      if (bar == gpu::Bar::bar1 && userd_slot(offset, gchid, field) && field == regs::userd::GP_PUT) {
        if (gchid < channels_.size())
          doorbell(gchid, value);
        else
          guest_error(strfmt("GP_PUT of channel %u outside the VM's %zu channels", gchid, channels_.size()));
      }
    }
  });
}

uint32_t Vgpu::pramin_read(uint32_t offset) {
  const uint64_t gaddr = (uint64_t{pbus::PraminBase::get(pramin_window_)} << pbus::PRAMIN_BASE_SHIFT) + offset;
  auto v = guest_.read32(gaddr);
  if (!v) {
    guest_error("PRAMIN read at " + hex(gaddr) + " outside the VM's VRAM");
    pbus_intr_ |= pbus::IntrMmioFault::mask;
    Counters::bump(counters_.faults);
    update_interrupt_line();
    return ~uint32_t{0};
  }
  return *v;
}

void Vgpu::pramin_write(uint32_t offset, uint32_t value) {
  const uint64_t gaddr = (uint64_t{pbus::PraminBase::get(pramin_window_)} << pbus::PRAMIN_BASE_SHIFT) + offset;
  if (!guest_.write32(gaddr, value)) {
    guest_error("PRAMIN write at " + hex(gaddr) + " outside the VM's VRAM");
    pbus_intr_ |= pbus::IntrMmioFault::mask;
    Counters::bump(counters_.faults);
    update_interrupt_line();
    return;
  }
  note_guest_write(gaddr);
}

}  // namespace vgpu::mediator
