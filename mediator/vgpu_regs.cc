// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's BAR0 register table: which registers are virtualized per VM,
// which are read from the physical GPU, which are sensitive (validated,
// then reflected into the physical GPU or the shadows). Offsets not listed
// are unimplemented: a logged guest error, and reads give BAD_REGISTER.
#include <vector>

#include "common/text.h"
#include "mediator/host.h"
#include "mediator/vgpu.h"

namespace vgpu::mediator {

struct VgpuRegs {
  using R = MmioRecord<Vgpu>;

  // ---- PMC
  static uint32_t boot0(Vgpu& v, uint32_t) { return v.host_.gpu().read32(regs::pmc::BOOT_0.offset); }
  static uint32_t zero(Vgpu&, uint32_t) { return 0; }
  static void ignore(Vgpu&, uint32_t, uint32_t) {}
  static uint32_t intr0(Vgpu& v, uint32_t) { return v.intr0(); }
  static uint32_t pmc_intr_en(Vgpu& v, uint32_t) { return v.pmc_intr_en_; }
  static void set_pmc_intr_en(Vgpu& v, uint32_t, uint32_t x) {
    v.pmc_intr_en_ = x & regs::pmc::IntrEnHardware::mask;
    v.update_interrupt_line();
  }
  static uint32_t pmc_intr_mask(Vgpu& v, uint32_t) { return v.pmc_intr_mask_; }
  static void set_pmc_intr_mask(Vgpu& v, uint32_t, uint32_t x) {
    v.pmc_intr_mask_ = x;
    v.update_interrupt_line();
  }
  static uint32_t pmc_enable(Vgpu& v, uint32_t) { return v.pmc_enable_; }
  static void set_pmc_enable(Vgpu& v, uint32_t, uint32_t x) {
    const uint32_t pfifo = regs::pmc::enable::Pfifo::mask;
    // Only this VM's view: clearing PFIFO resets this vGPU, never the GPU.
    if ((v.pmc_enable_ & pfifo) && !(x & pfifo)) v.reset();
    v.pmc_enable_ = x & regs::pmc::enable::ALL;
  }
  static uint32_t pbdma_enable(Vgpu& v, uint32_t) { return v.pbdma_enable_; }
  static void set_pbdma_enable(Vgpu& v, uint32_t, uint32_t x) { v.pbdma_enable_ = x & ((1u << regs::NUM_PBDMA) - 1); }

  // ---- PBUS
  static uint32_t pbus_intr(Vgpu& v, uint32_t) { return v.pbus_intr_; }
  static void ack_pbus_intr(Vgpu& v, uint32_t, uint32_t x) {
    v.pbus_intr_ &= ~x;
    v.update_interrupt_line();
  }
  static uint32_t pbus_intr_en(Vgpu& v, uint32_t) { return v.pbus_intr_en_; }
  static void set_pbus_intr_en(Vgpu& v, uint32_t, uint32_t x) {
    v.pbus_intr_en_ = x;
    v.update_interrupt_line();
  }
  static uint32_t pramin_window(Vgpu& v, uint32_t) { return v.pramin_window_; }
  static void set_pramin_window(Vgpu& v, uint32_t, uint32_t x) {
    v.pramin_window_ = x & (regs::pbus::PraminBase::mask | regs::pbus::PraminTarget::mask);
  }
  static uint32_t bar1_inst(Vgpu& v, uint32_t) { return v.bar1_.inst_reg; }
  static void set_bar1_inst(Vgpu& v, uint32_t, uint32_t x) { v.write_bar_inst(gpu::Bar::bar1, x); }
  static uint32_t bar3_inst(Vgpu& v, uint32_t) { return v.bar3_.inst_reg; }
  static void set_bar3_inst(Vgpu& v, uint32_t, uint32_t x) { v.write_bar_inst(gpu::Bar::bar3, x); }

  // ---- PTIMER: time is the physical GPU's; alarms are per VM (not raised).
  static uint32_t time0(Vgpu& v, uint32_t) { return v.host_.gpu().read32(regs::ptimer::TIME_0.offset); }
  static uint32_t time1(Vgpu& v, uint32_t) { return v.host_.gpu().read32(regs::ptimer::TIME_1.offset); }
  static uint32_t ptimer_intr(Vgpu& v, uint32_t) { return v.ptimer_intr_; }
  static void ack_ptimer_intr(Vgpu& v, uint32_t, uint32_t x) { v.ptimer_intr_ &= ~x; }
  static uint32_t ptimer_intr_en(Vgpu& v, uint32_t) { return v.ptimer_intr_en_; }
  static void set_ptimer_intr_en(Vgpu& v, uint32_t, uint32_t x) { v.ptimer_intr_en_ = x & regs::ptimer::IntrAlarm::mask; }
  static uint32_t alarm(Vgpu& v, uint32_t) { return v.ptimer_alarm_; }
  static void set_alarm(Vgpu& v, uint32_t, uint32_t x) { v.ptimer_alarm_ = x; }
  static uint32_t numerator(Vgpu& v, uint32_t) { return v.ptimer_num_; }
  static void set_numerator(Vgpu& v, uint32_t, uint32_t x) { v.ptimer_num_ = x; }
  static uint32_t denominator(Vgpu& v, uint32_t) { return v.ptimer_den_; }
  static void set_denominator(Vgpu& v, uint32_t, uint32_t x) { v.ptimer_den_ = x; }

  // ---- VRAM size discovery: the partition, not the GPU.
  static uint32_t fbp_count(Vgpu&, uint32_t) { return 1; }
  static uint32_t fbpa_mib(Vgpu& v, uint32_t) { return static_cast<uint32_t>(v.partition().size / MiB); }

  // ---- MMU: always ready; the trigger is a shadow sync point.
  static uint32_t mmu_ctrl(Vgpu&, uint32_t) {
    return regs::mmu::CtrlInvalidateDone::mask | regs::mmu::CtrlFreeSlots::make(regs::mmu::CtrlFreeSlots::max);
  }
  static uint32_t invalidate_pdb(Vgpu& v, uint32_t) { return v.mmu_invalidate_pdb_; }
  static void set_invalidate_pdb(Vgpu& v, uint32_t, uint32_t x) { v.mmu_invalidate_pdb_ = x; }
  static void invalidate(Vgpu& v, uint32_t, uint32_t x) { v.invalidate_tlb(v.mmu_invalidate_pdb_, x); }

  // ---- PFLUSH: BAR writes are never posted here.
  static uint32_t flush(Vgpu&, uint32_t) { return 0; }

  // ---- PFIFO
  static uint32_t pfifo_intr(Vgpu& v, uint32_t) { return v.pfifo_intr_; }
  static void ack_pfifo_intr(Vgpu& v, uint32_t, uint32_t x) {
    v.pfifo_intr_ &= ~x;
    v.update_interrupt_line();
  }
  static uint32_t pfifo_intr_en(Vgpu& v, uint32_t) { return v.pfifo_intr_en_; }
  static void set_pfifo_intr_en(Vgpu& v, uint32_t, uint32_t x) {
    v.pfifo_intr_en_ = x;
    v.update_interrupt_line();
  }
  static uint32_t pfifo_ctrl(Vgpu& v, uint32_t) { return v.pfifo_ctrl_; }
  static void set_pfifo_ctrl(Vgpu& v, uint32_t, uint32_t x) { v.pfifo_ctrl_ = x & regs::pfifo::CtrlEnable::mask; }
  static uint32_t userd_base(Vgpu& v, uint32_t) { return v.userd_base_; }
  static void set_userd_base(Vgpu& v, uint32_t, uint32_t x) {
    v.userd_base_ = x & (regs::pfifo::UserdBaseAddr::mask | regs::pfifo::UserdBaseEnable::mask);
    v.rebuild_layout(true);   // USERD pages stay trapped
  }
  static uint32_t runlist_base(Vgpu& v, uint32_t) { return v.runlist_base_; }
  static void set_runlist_base(Vgpu& v, uint32_t, uint32_t x) { v.runlist_base_ = x; }
  static void runlist_submit(Vgpu& v, uint32_t, uint32_t x) { v.submit_runlist(regs::pfifo::RunlistCount::get(x)); }
  static uint32_t runlist_intr(Vgpu& v, uint32_t) { return v.runlist_intr_; }
  static void ack_runlist_intr(Vgpu& v, uint32_t, uint32_t x) { v.runlist_intr_ &= ~x; }
  static uint32_t chan_table_error(Vgpu& v, uint32_t) { return v.chan_table_error_; }
  static uint32_t fault_pending(Vgpu& v, uint32_t) { return v.fault_pending_; }
  static void ack_fault_pending(Vgpu& v, uint32_t, uint32_t x) { v.fault_pending_ &= ~x; }
  static uint32_t preempt(Vgpu& v, uint32_t) { return v.preempt_; }
  static void set_preempt(Vgpu& v, uint32_t, uint32_t x) { v.preempt_ = regs::pfifo::PreemptChid::get(x); }
  static uint32_t time_lo(Vgpu& v, uint32_t) { return v.host_.gpu().read32(regs::pfifo::TIME_LO.offset); }
  static uint32_t time_hi(Vgpu& v, uint32_t) { return v.host_.gpu().read32(regs::pfifo::TIME_HI.offset); }

  static uint32_t chan_inst(Vgpu& v, uint32_t c) { return c < v.channels_.size() ? v.channels_[c].inst_reg : 0; }
  static void set_chan_inst(Vgpu& v, uint32_t c, uint32_t x) { v.write_chan_inst(c, x); }
  static uint32_t chan_state(Vgpu& v, uint32_t c) { return v.read_chan_state(c); }
  static void set_chan_state(Vgpu& v, uint32_t c, uint32_t x) { v.write_chan_state(c, x); }
  static uint32_t chan_error_pending(Vgpu& v, uint32_t i) { return v.chan_error_pending_[i]; }
  static void ack_chan_error_pending(Vgpu& v, uint32_t i, uint32_t x) {
    v.chan_error_pending_[i] &= ~x;
    v.update_interrupt_line();
  }
  static uint32_t nonstall_pending(Vgpu& v, uint32_t i) { return v.nonstall_pending_[i]; }
  static void ack_nonstall_pending(Vgpu& v, uint32_t i, uint32_t x) { v.nonstall_pending_[i] &= ~x; }
  static uint32_t chan_error(Vgpu& v, uint32_t c) { return v.chan_errors_[c].code; }
  static void clear_chan_error(Vgpu& v, uint32_t c, uint32_t x) {
    if (x == 0) v.chan_errors_[c] = {};
  }
  static uint32_t chan_error_method(Vgpu& v, uint32_t c) { return v.chan_errors_[c].method; }
  static uint32_t chan_error_addr_lo(Vgpu& v, uint32_t c) { return v.chan_errors_[c].addr_lo; }
  static uint32_t chan_error_addr_hi(Vgpu& v, uint32_t c) { return v.chan_errors_[c].addr_hi; }
  static uint32_t fault_inst(Vgpu& v, uint32_t u) { return v.faults_[u].inst; }
  static uint32_t fault_va_lo(Vgpu& v, uint32_t u) { return v.faults_[u].va_lo; }
  static uint32_t fault_va_hi(Vgpu& v, uint32_t u) { return v.faults_[u].va_hi; }
  static uint32_t fault_type(Vgpu& v, uint32_t u) { return v.faults_[u].type; }

  static std::vector<R> records() {
    using A = Access;
    namespace pmc = regs::pmc;
    namespace pbus = regs::pbus;
    namespace pt = regs::ptimer;
    namespace pf = regs::pfifo;
    return {
        reg<Vgpu>("PMC.BOOT_0", pmc::BOOT_0, A::physical_read, boot0, nullptr),
        reg<Vgpu>("PMC.BOOT_1", pmc::BOOT_1, A::virtualized, zero, ignore),
        reg<Vgpu>("PMC.INTR_0", pmc::INTR_0, A::virtualized, intr0, nullptr),
        reg<Vgpu>("PMC.INTR_EN_0", pmc::INTR_EN_0, A::virtualized, pmc_intr_en, set_pmc_intr_en),
        reg<Vgpu>("PMC.ENABLE", pmc::ENABLE, A::sensitive, pmc_enable, set_pmc_enable),
        reg<Vgpu>("PMC.PBDMA_ENABLE", pmc::PBDMA_ENABLE, A::virtualized, pbdma_enable, set_pbdma_enable),
        reg<Vgpu>("PMC.INTR_MASK_0", pmc::INTR_MASK_0, A::virtualized, pmc_intr_mask, set_pmc_intr_mask),
        reg<Vgpu>("PBUS.INTR", pbus::INTR, A::virtualized, pbus_intr, ack_pbus_intr),
        reg<Vgpu>("PBUS.INTR_EN", pbus::INTR_EN, A::virtualized, pbus_intr_en, set_pbus_intr_en),
        reg<Vgpu>("PBUS.PRAMIN_WINDOW", pbus::PRAMIN_WINDOW, A::virtualized, pramin_window, set_pramin_window),
        reg<Vgpu>("PBUS.BAR1_INST", pbus::BAR1_INST, A::sensitive, bar1_inst, set_bar1_inst),
        reg<Vgpu>("PBUS.BAR3_INST", pbus::BAR3_INST, A::sensitive, bar3_inst, set_bar3_inst),
        reg<Vgpu>("PFLUSH.FLUSH", regs::pflush::FLUSH, A::virtualized, flush, ignore),
        reg<Vgpu>("PTIMER.INTR_0", pt::INTR_0, A::virtualized, ptimer_intr, ack_ptimer_intr),
        reg<Vgpu>("PTIMER.INTR_EN_0", pt::INTR_EN_0, A::virtualized, ptimer_intr_en, set_ptimer_intr_en),
        reg<Vgpu>("PTIMER.NUMERATOR", pt::NUMERATOR, A::virtualized, numerator, set_numerator),
        reg<Vgpu>("PTIMER.DENOMINATOR", pt::DENOMINATOR, A::virtualized, denominator, set_denominator),
        reg<Vgpu>("PTIMER.TIME_0", pt::TIME_0, A::physical_read, time0, nullptr),
        reg<Vgpu>("PTIMER.TIME_1", pt::TIME_1, A::physical_read, time1, nullptr),
        reg<Vgpu>("PTIMER.ALARM_0", pt::ALARM_0, A::virtualized, alarm, set_alarm),
        reg<Vgpu>("PUNITS.FBP_COUNT", regs::punits::FBP_COUNT, A::virtualized, fbp_count, nullptr),
        reg<Vgpu>("PUNITS.FBP_DISABLED_MASK", regs::punits::FBP_DISABLED_MASK, A::virtualized, zero, nullptr),
        R{"PFB.FBPA_MIB", regs::pfb::FBPA_MIB, A::virtualized, fbpa_mib, nullptr},
        reg<Vgpu>("MMU.CTRL", regs::mmu::CTRL, A::virtualized, mmu_ctrl, ignore),
        reg<Vgpu>("MMU.INVALIDATE_PDB", regs::mmu::INVALIDATE_PDB, A::virtualized, invalidate_pdb, set_invalidate_pdb),
        reg<Vgpu>("MMU.INVALIDATE", regs::mmu::INVALIDATE, A::sensitive, nullptr, invalidate),
        reg<Vgpu>("PFIFO.INTR", pf::INTR, A::virtualized, pfifo_intr, ack_pfifo_intr),
        reg<Vgpu>("PFIFO.INTR_EN", pf::INTR_EN, A::virtualized, pfifo_intr_en, set_pfifo_intr_en),
        reg<Vgpu>("PFIFO.CTRL", pf::CTRL, A::virtualized, pfifo_ctrl, set_pfifo_ctrl),
        reg<Vgpu>("PFIFO.PBDMA_ENABLE", pf::PBDMA_ENABLE, A::virtualized, pbdma_enable, set_pbdma_enable),
        reg<Vgpu>("PFIFO.USERD_BASE", pf::USERD_BASE, A::sensitive, userd_base, set_userd_base),
        reg<Vgpu>("PFIFO.RUNLIST_BASE", pf::RUNLIST_BASE, A::virtualized, runlist_base, set_runlist_base),
        reg<Vgpu>("PFIFO.RUNLIST_SUBMIT", pf::RUNLIST_SUBMIT, A::sensitive, nullptr, runlist_submit),
        reg<Vgpu>("PFIFO.RUNLIST_STATUS", pf::RUNLIST_STATUS, A::virtualized, zero, nullptr),
        reg<Vgpu>("PFIFO.RUNLIST_INTR", pf::RUNLIST_INTR, A::virtualized, runlist_intr, ack_runlist_intr),
        reg<Vgpu>("PFIFO.CHAN_TABLE_ERROR", pf::CHAN_TABLE_ERROR, A::virtualized, chan_table_error, nullptr),
        reg<Vgpu>("PFIFO.FAULT_UNIT_PENDING", pf::FAULT_UNIT_PENDING, A::virtualized, fault_pending, ack_fault_pending),
        reg<Vgpu>("PFIFO.NONSTALL_ENGINE", pf::NONSTALL_ENGINE, A::virtualized, zero, ignore),
        reg<Vgpu>("PFIFO.PREEMPT", pf::PREEMPT, A::virtualized, preempt, set_preempt),
        reg<Vgpu>("PFIFO.TIME_LO", pf::TIME_LO, A::physical_read, time_lo, nullptr),
        reg<Vgpu>("PFIFO.TIME_HI", pf::TIME_HI, A::physical_read, time_hi, nullptr),
        R{"PFIFO.CHAN_INST", pf::CHAN_INST, A::sensitive, chan_inst, set_chan_inst},
        R{"PFIFO.CHAN_STATE", pf::CHAN_STATE, A::sensitive, chan_state, set_chan_state},
        R{"PFIFO.CHAN_ERROR_PENDING", pf::CHAN_ERROR_PENDING, A::virtualized, chan_error_pending, ack_chan_error_pending},
        R{"PFIFO.NONSTALL_PENDING", pf::NONSTALL_PENDING, A::virtualized, nonstall_pending, ack_nonstall_pending},
        R{"PFIFO.CHAN_ERROR", pf::CHAN_ERROR, A::virtualized, chan_error, clear_chan_error},
        R{"PFIFO.CHAN_ERROR_METHOD", pf::CHAN_ERROR_METHOD, A::virtualized, chan_error_method, nullptr},
        R{"PFIFO.CHAN_ERROR_ADDR_LO", pf::CHAN_ERROR_ADDR_LO, A::virtualized, chan_error_addr_lo, nullptr},
        R{"PFIFO.CHAN_ERROR_ADDR_HI", pf::CHAN_ERROR_ADDR_HI, A::virtualized, chan_error_addr_hi, nullptr},
        R{"PFIFO.FAULT_INST", pf::FAULT_INST, A::virtualized, fault_inst, nullptr},
        R{"PFIFO.FAULT_VA_LO", pf::FAULT_VA_LO, A::virtualized, fault_va_lo, nullptr},
        R{"PFIFO.FAULT_VA_HI", pf::FAULT_VA_HI, A::virtualized, fault_va_hi, nullptr},
        R{"PFIFO.FAULT_TYPE", pf::FAULT_TYPE, A::virtualized, fault_type, nullptr},
    };
  }
};

const Vgpu::Table& Vgpu::table() {
  static const Table t(VgpuRegs::records());
  return t;
}

const char* access_name(Access a) {
  switch (a) {
    case Access::virtualized: return "virtualized";
    case Access::physical_read: return "physical";
    case Access::sensitive: return "sensitive";
    case Access::unimplemented: return "unimplemented";
  }
  return "?";
}

uint32_t Vgpu::read32(uint32_t offset) {
  Counters::bump(counters_.trapped_reads);
  if (offset >= regs::pramin::BASE && offset - regs::pramin::BASE < regs::pramin::SIZE) {
    MediatorLock lock(mutex_);
    return pramin_read(offset - regs::pramin::BASE);
  }
  const Table::Hit hit = table().find(offset);
  MediatorLock lock(mutex_);
  if (!hit.record || !hit.record->read) {
    if (!hit.record) guest_error("read of unimplemented register " + hex(offset));
    return hit.record ? 0 : regs::BAD_REGISTER;
  }
  return hit.record->read(*this, hit.index);
}

void Vgpu::write32(uint32_t offset, uint32_t value) {
  Counters::bump(counters_.trapped_writes);
  locked([&] {
    if (offset >= regs::pramin::BASE && offset - regs::pramin::BASE < regs::pramin::SIZE) {
      pramin_write(offset - regs::pramin::BASE, value);
    } else {
      const Table::Hit hit = table().find(offset);
      if (!hit.record)
        guest_error(strfmt("write of %s to unimplemented register %s", hex(value).c_str(), hex(offset).c_str()));
      else if (!hit.record->write)
        guest_error(strfmt("write of %s to read-only register %s", hex(value).c_str(), hit.record->name));
      else
        hit.record->write(*this, hit.index, value);
    }
  });
}

}  // namespace vgpu::mediator
