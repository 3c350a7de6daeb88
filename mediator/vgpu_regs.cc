// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's BAR0: one register table. The plain per-VM registers are the
// VirtualRegisters' rows; the rows declared here are the ones that reach
// beyond them: read from the physical GPU (identity, time), sized by the
// partition, or sensitive (validated, then reflected into the shadows or
// the physical GPU). Offsets no row covers are unimplemented: a guest
// error, and reads give BAD_REGISTER. The PRAMIN window is handled before
// the table.
#include "common/text.h"
#include "mediator/host.h"
#include "mediator/reg_names.h"
#include "mediator/vgpu.h"

namespace vgpu::mediator {
namespace {


bool in_pramin(uint32_t offset) {
  return offset >= regs::pramin::BASE && offset - regs::pramin::BASE < regs::pramin::SIZE;
}

}  // namespace

void Vgpu::build_table() {
  gpu::Gpu& g = host_.gpu();
  const auto physical = [&g](const char* name, Reg32 reg) {
    return read_only(name, reg, [&g, reg](uint32_t) { return g.read32(reg.offset); });
  };
  std::vector<RegRow> rows = regs_.plain_rows();
  std::vector<RegRow> own{
      physical("PMC.BOOT_0", pmc::BOOT_0),
      physical("PTIMER.TIME_0", pt::TIME_0),
      physical("PTIMER.TIME_1", pt::TIME_1),
      physical("PFIFO.TIME_LO", pf::TIME_LO),
      physical("PFIFO.TIME_HI", pf::TIME_HI),
      // VRAM size discovery: the partition, not the GPU.
      constant("PFB.FBPA_MIB", regs::pfb::FBPA_MIB, static_cast<uint32_t>(partition().size / MiB)),
      sensitive("PMC.ENABLE", pmc::ENABLE, regs_.pmc_enable, [this](uint32_t, uint32_t x) { set_pmc_enable(x); }),
      sensitive(
          "PBUS.BAR1_INST", pbus::BAR1_INST, [this](uint32_t) { return bars_.inst_reg(gpu::Bar::bar1); },
          [this](uint32_t, uint32_t x) { set_bar_inst(gpu::Bar::bar1, x); }),
      sensitive(
          "PBUS.BAR3_INST", pbus::BAR3_INST, [this](uint32_t) { return bars_.inst_reg(gpu::Bar::bar3); },
          [this](uint32_t, uint32_t x) { set_bar_inst(gpu::Bar::bar3, x); }),
      write_only("MMU.INVALIDATE", mmu::INVALIDATE, [this](uint32_t, uint32_t x) { invalidate_tlb(x); }),
      sensitive("PFIFO.USERD_BASE", pf::USERD_BASE, regs_.userd_base,
                [this](uint32_t, uint32_t x) { set_userd_base(x); }),
      write_only("PFIFO.RUNLIST_SUBMIT", pf::RUNLIST_SUBMIT,
                 [this](uint32_t, uint32_t x) { channels_.submit_runlist(pf::RunlistCount::get(x)); }),
      sensitive(
          "PFIFO.CHAN_INST", pf::CHAN_INST, [this](uint32_t c) { return channels_.inst_reg(c); },
          [this](uint32_t c, uint32_t x) {
            channels_.write_inst(c, x);
            if (channels_.take_layout_changed()) rebuild_layout(false);  // a new space's tables stay trapped
          }),
      sensitive(
          "PFIFO.CHAN_STATE", pf::CHAN_STATE, [this](uint32_t c) { return channels_.read_state(c); },
          [this](uint32_t c, uint32_t x) { channels_.write_state(c, x); }),
  };
  if (config_.pv) {
    // The PV block exists only with pv=on: without it these offsets are
    // unimplemented, as on the physical GPU.
    own.push_back(read_only("PV.CAPS", regs::pv::CAPS, [this](uint32_t) { return pv_.caps(); }));
    own.push_back(sensitive(
        "PV.SLOT_BASE", regs::pv::SLOT_BASE, [this](uint32_t) { return pv_.slot_base(); },
        [this](uint32_t, uint32_t x) { pv_.set_slot_base(x); }));
    own.push_back(write_only("PV.DOORBELL", regs::pv::DOORBELL, [this](uint32_t, uint32_t x) { pv_doorbell(x); }));
    own.push_back(read_only("PV.STATUS", regs::pv::STATUS, [this](uint32_t) { return pv_.status(); }));
    own.push_back(read_only("PV.BATCHES", regs::pv::BATCHES, [this](uint32_t) { return pv_.batches(); }));
  }
  for (RegRow& r : own) rows.push_back(std::move(r));
  for (RegRow& r : rows)
    if (Status s = table_.add(std::move(r)); !s)
      host_.log_internal_error("vgpu " + config_.name + ": " + s.error().message);
}

// ---- sensitive registers

void Vgpu::set_pmc_enable(uint32_t value) {
  const uint32_t pfifo = pmc::enable::Pfifo::mask;
  // Only this VM's view: clearing PFIFO resets this vGPU, never the GPU.
  if ((regs_.pmc_enable & pfifo) && !(value & pfifo)) reset();
  regs_.pmc_enable = value & pmc::enable::ALL;
}

void Vgpu::set_bar_inst(gpu::Bar bar, uint32_t value) {
  const char* name = bar == gpu::Bar::bar1 ? "BAR1" : "BAR3";
  if (Status s = bars_.set_inst(bar, value); !s) {
    guest_error(strfmt("%s: %s", name, s.error().message.c_str()));
    record_fault(bar == gpu::Bar::bar1 ? regs::FaultUnit::bar1 : regs::FaultUnit::bar3,
                 regs::FaultReason::pt_not_present, bars_.inst_addr(bar), 0, false, std::nullopt);
  } else if (Status synced = bars_.sync(bar, true); !synced) {
    guest_error(strfmt("%s shadow sync: %s", name, synced.error().message.c_str()));
  }
  rebuild_layout(true);
}

void Vgpu::set_userd_base(uint32_t value) {
  regs_.userd_base = value & (pf::UserdBaseAddr::mask | pf::UserdBaseEnable::mask);
  rebuild_layout(true);  // USERD pages stay trapped
}

void Vgpu::invalidate_tlb(uint32_t trigger) {
  if (!mmu::InvalidateTrigger::get(trigger)) return;
  Counters::bump(counters_.tlb_invalidates);
  const bool all = mmu::InvalidateAllPdb::get(trigger);
  const uint64_t pd = uint64_t{mmu::InvalidatePdbAddr::get(regs_.mmu_invalidate_pdb)} << fmt::TABLE_ALIGN_SHIFT;
  if (!config_.lazy_shadow) {
    if (all)
      spaces_.sync_all_full();
    else
      spaces_.sync_full(pd);
  }
  bool bar_changed = false;
  for (gpu::Bar bar : {gpu::Bar::bar1, gpu::Bar::bar3}) {
    if (bars_.has_space(bar) && (all || bars_.guest_pd(bar) == pd)) {
      if (Status s = bars_.sync(bar, !config_.lazy_shadow); !s)
        guest_error(strfmt("%s shadow sync: %s", bar == gpu::Bar::bar1 ? "BAR1" : "BAR3", s.error().message.c_str()));
      bar_changed = true;
    }
  }
  rebuild_layout(bar_changed);
}

void Vgpu::pv_doorbell(uint32_t value) {
  (void)pv_.doorbell(value);
  // A batch that changed a BAR's space: the BAR reloads (its page list and
  // the remap layout), as after a BAR TLB invalidate.
  bool bar_changed = false;
  for (const PvServer::Change& c : pv_.take_changed())
    for (gpu::Bar bar : {gpu::Bar::bar1, gpu::Bar::bar3})
      if (bars_.uses(bar, c.space)) {
        if (c.bytes == PvServer::ALL)
          (void)bars_.sync(bar, false);
        else
          bars_.sync_range(bar, c.va, c.bytes);
        bar_changed = true;
      }
  if (bar_changed) rebuild_layout(true);
}

bool Vgpu::pv_mappings(uint32_t id, const std::function<void(uint64_t, uint64_t, uint64_t, bool)>& fn) const {
  std::shared_ptr<shadow::ShadowSpace> space;
  {
    MediatorLock lock(mutex_);
    space = pv_.space(id);
  }
  if (!space) return false;
  space->for_each_mapping(0, fmt::VA_LIMIT, fn);
  return true;
}

// ---- BAR0 entry points

uint32_t Vgpu::read32(uint32_t offset) {
  Counters::bump(counters_.trapped_reads);
  MediatorLock lock(mutex_);
  return in_pramin(offset) ? pramin_read(offset - regs::pramin::BASE) : table_.read(offset);
}

void Vgpu::write32(uint32_t offset, uint32_t value) {
  Counters::bump(counters_.trapped_writes);
  locked([&] {
    if (in_pramin(offset))
      pramin_write(offset - regs::pramin::BASE, value);
    else
      table_.write(offset, value);
  });
}

// ---- PRAMIN: a VM's window base is a guest VRAM address

uint32_t Vgpu::pramin_read(uint32_t offset) {
  const uint64_t gaddr = (uint64_t{pbus::PraminBase::get(regs_.pramin_window)} << pbus::PRAMIN_BASE_SHIFT) + offset;
  auto v = guest_.read32(gaddr);
  if (!v) {
    guest_error("PRAMIN read at " + hex(gaddr) + " outside the VM's VRAM");
    regs_.mmio_fault();
    Counters::bump(counters_.faults);
    return ~uint32_t{0};
  }
  return *v;
}

void Vgpu::pramin_write(uint32_t offset, uint32_t value) {
  const uint64_t gaddr = (uint64_t{pbus::PraminBase::get(regs_.pramin_window)} << pbus::PRAMIN_BASE_SHIFT) + offset;
  if (!guest_.write32(gaddr, value)) {
    guest_error("PRAMIN write at " + hex(gaddr) + " outside the VM's VRAM");
    regs_.mmio_fault();
    Counters::bump(counters_.faults);
    return;
  }
  note_guest_write(gaddr);
}

}  // namespace vgpu::mediator
