// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's trapped BAR1/BAR3 accesses and its BAR remap layout. With BAR
// remap, pages that hold no sensitive state are mapped straight into the
// VM (direct_ranges); pages holding the guest's page tables and the USERD
// doorbells stay trapped and land here. The layout follows the guest's BAR
// TLB invalidates, as a BAR TLB would (mediator/bar_apertures.h).
#include "common/text.h"
#include "mediator/host.h"
#include "mediator/reg_names.h"
#include "mediator/vgpu.h"

namespace vgpu::mediator {
namespace {

regs::FaultUnit fault_unit(gpu::Bar bar) {
  return bar == gpu::Bar::bar1 ? regs::FaultUnit::bar1 : regs::FaultUnit::bar3;
}
const char* bar_name(gpu::Bar bar) { return bar == gpu::Bar::bar1 ? "BAR1" : "BAR3"; }

}  // namespace

void Vgpu::rebuild_layout(bool pages_changed) {
  std::vector<uint64_t> pages;
  spaces_.append_table_pages(pages);
  auto added = bars_.rebuild(std::move(pages), pages_changed);
  if (!added) return;
  // A table page that was directly mapped until now may have been written
  // through that mapping unseen: rescan it at the next sync.
  for (uint64_t p : *added) note_guest_write(p);
  Counters::bump(counters_.layout_rebuilds);
}

std::optional<Vgpu::UserdSlot> Vgpu::userd_slot(uint64_t bar1_offset) const {
  if (!pf::UserdBaseEnable::get(regs_.userd_base)) return std::nullopt;
  const uint64_t base = uint64_t{pf::UserdBaseAddr::get(regs_.userd_base)} << pf::USERD_BASE_SHIFT;
  if (bar1_offset < base || bar1_offset - base >= uint64_t{config_.channels} * regs::userd::SIZE) return std::nullopt;
  return UserdSlot{static_cast<uint32_t>((bar1_offset - base) / regs::userd::SIZE),
                   static_cast<uint32_t>((bar1_offset - base) % regs::userd::SIZE)};
}

std::vector<DirectRange> Vgpu::direct_ranges(gpu::Bar bar) const {
  MediatorLock lock(mutex_);
  if (!config_.bar_remap) return {};
  const uint64_t base = uint64_t{pf::UserdBaseAddr::get(regs_.userd_base)} << pf::USERD_BASE_SHIFT;
  const bool userd = pf::UserdBaseEnable::get(regs_.userd_base);
  auto ranges = bars_.direct_ranges(bar, userd ? base : 0,
                                    userd ? base + uint64_t{config_.channels} * regs::userd::SIZE : 0);
  // The caller maps them straight into the VM: the GPU's engines must not
  // leave them valid on a device alone (docs/cuda.md).
  for (const DirectRange& r : ranges) host_.gpu().map_directly(r.vram_addr, r.bytes);
  return ranges;
}

void Vgpu::note_guest_write(uint64_t gaddr) {
  if (!config_.lazy_shadow) return;  // naive mode rescans everything anyway
  if (!bars_.trapped_table_page(align_down(gaddr, BarApertures::PAGE))) return;
  spaces_.note_write(gaddr);
  bars_.note_write(gaddr);
}

// An access the BAR does not translate: beyond the BAR or its instance
// block's limit (vm_limit_exceeded, as the MMU checks the limit first),
// or on a page nothing maps (page_not_present).
void Vgpu::bar_fault(gpu::Bar bar, uint64_t offset, bool write) {
  const bool beyond = bars_.beyond_limit(bar, offset);
  // Built without printf: a fill over unmapped pages faults once a word
  // (65,536 times for a page table), and formatting was most of that.
  guest_error(std::string(bar_name(bar)) + (write ? " write at " : " read at ") + hex(offset) +
              (beyond ? ": beyond the BAR's limit" : ": no page mapped"));
  record_fault(fault_unit(bar), beyond ? regs::FaultReason::vm_limit_exceeded : regs::FaultReason::page_not_present,
               bars_.inst_addr(bar), offset, write, std::nullopt);
  regs_.mmio_fault();
}

uint32_t Vgpu::bar_read32(gpu::Bar bar, uint64_t offset) {
  Counters::bump(counters_.trapped_reads);
  return locked([&]() -> uint32_t {
    if (offset % sizeof(uint32_t) != 0 || bar == gpu::Bar::bar0) {
      guest_error(strfmt("%s read at misaligned offset %s", bar_name(bar), hex(offset).c_str()));
      return ~uint32_t{0};
    }
    const auto page = bars_.translate(bar, offset);
    if (!page) {
      bar_fault(bar, offset, false);
      return ~uint32_t{0};
    }
    if (bar == gpu::Bar::bar1) {
      // What the GPU publishes (GP_GET, GET, REF, ...) comes from the
      // physical channel's USERD page, so it is always current.
      const auto slot = userd_slot(offset);
      if (slot && channels_.bound(slot->gchid) && slot->field != regs::userd::GP_PUT)
        return host_.gpu().vram().read32(host_.host_userd(pchid_of(slot->gchid)) + slot->field);
    }
    return host_.gpu().vram().read32(page->host);
  });
}

void Vgpu::bar_write32(gpu::Bar bar, uint64_t offset, uint32_t value) {
  Counters::bump(counters_.trapped_writes);
  locked([&] { bar_write_word(bar, offset, value); });
}

// What bar_write32 does with mutex_ held.
void Vgpu::bar_write_word(gpu::Bar bar, uint64_t offset, uint32_t value) {
  if (offset % sizeof(uint32_t) != 0 || bar == gpu::Bar::bar0) {
    guest_error(strfmt("%s write at misaligned offset %s", bar_name(bar), hex(offset).c_str()));
    return;
  }
  const auto page = bars_.translate(bar, offset);
  if (!page) return bar_fault(bar, offset, true);
  if (page->read_only) {
    guest_error(strfmt("%s write at %s: read-only page", bar_name(bar), hex(offset).c_str()));
    record_fault(fault_unit(bar), regs::FaultReason::page_read_only, 0, offset, true, std::nullopt);
    return;
  }
  host_.gpu().vram().write32(page->host, value);
  note_guest_write(page->host - guest_.partition().base);
  if (bar != gpu::Bar::bar1) return;
  if (const auto slot = userd_slot(offset); slot && slot->field == regs::userd::GP_PUT) {
    if (slot->gchid < channels_.count())
      channels_.doorbell(slot->gchid, value);
    else
      guest_error(strfmt("GP_PUT of channel %u outside the VM's %u channels", slot->gchid, channels_.count()));
  }
}

// The words of each BAR3 page that translates to a writable one are
// written at once and the page noted once (the shadow tracks whole
// pages); every other word (BAR1, whose USERD words ring doorbells, a
// fault, a read-only page, a misaligned fill) as bar_write32 would.
void Vgpu::bar_fill32(gpu::Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) {
  bytes = align_down(bytes, sizeof(uint32_t));
  Counters::bump(counters_.trapped_writes, bytes / sizeof(uint32_t));
  locked([&] {
    std::array<uint32_t, BarApertures::PAGE / sizeof(uint32_t)> words;
    words.fill(value);
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t at = offset + done;
      const uint64_t n = std::min(bytes - done, BarApertures::PAGE - at % BarApertures::PAGE);
      const auto page = bar == gpu::Bar::bar3 && at % sizeof(uint32_t) == 0 ? bars_.translate(bar, at) : std::nullopt;
      if (page && !page->read_only && host_.gpu().vram().write(page->host, words.data(), n)) {
        note_guest_write(page->host - guest_.partition().base);
      } else {
        for (uint64_t w = 0; w < n; w += sizeof(uint32_t)) bar_write_word(bar, at + w, value);
      }
      done += n;
    }
  });
}

}  // namespace vgpu::mediator
