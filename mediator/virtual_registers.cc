// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/virtual_registers.h"

#include "mediator/reg_names.h"

namespace vgpu::mediator {
namespace {


// Reads of registers whose operations complete during the write.
constexpr uint32_t FLUSH_IDLE = 0;
constexpr uint32_t MMU_CTRL_READY = mmu::CtrlInvalidateDone::mask | mmu::CtrlFreeSlots::make(mmu::CtrlFreeSlots::max);
constexpr uint32_t RUNLIST_IDLE = 0;
constexpr uint32_t FBP_COUNT = 1;
constexpr uint32_t FBP_NONE_DISABLED = 0;
// Writes accepted and dropped (nouveau writes them; the VM has nothing to change).
const RegRow::Write IGNORED = [](uint32_t, uint32_t) {};

}  // namespace

std::vector<RegRow> VirtualRegisters::plain_rows() {
  const auto read_array = [](const char* name, RegArray32 arr, const uint32_t* words) {
    return read_only(name, arr, [words](uint32_t i) { return words[i]; });
  };
  return {
      plain("PMC.BOOT_1", pmc::BOOT_1, boot_1_, 0),  // little endian only
      read_only("PMC.INTR_0", pmc::INTR_0, [this](uint32_t) { return intr0(); }),
      plain("PMC.INTR_EN_0", pmc::INTR_EN_0, pmc_intr_en_, pmc::IntrEnHardware::mask),
      plain("PMC.PBDMA_ENABLE", pmc::PBDMA_ENABLE, pbdma_enable_, regs::ALL_PBDMA),
      plain("PMC.INTR_MASK_0", pmc::INTR_MASK_0, pmc_intr_mask_),
      rw1c("PBUS.INTR", pbus::INTR, pbus_intr_),
      plain("PBUS.INTR_EN", pbus::INTR_EN, pbus_intr_en_),
      plain("PBUS.PRAMIN_WINDOW", pbus::PRAMIN_WINDOW, pramin_window,
            pbus::PraminBase::mask | pbus::PraminTarget::mask),
      sensitive(
          "PFLUSH.FLUSH", regs::pflush::FLUSH, [](uint32_t) { return FLUSH_IDLE; }, IGNORED),
      rw1c("PTIMER.INTR_0", pt::INTR_0, ptimer_intr_),
      plain("PTIMER.INTR_EN_0", pt::INTR_EN_0, ptimer_intr_en_, pt::IntrAlarm::mask),
      plain("PTIMER.NUMERATOR", pt::NUMERATOR, ptimer_num_),
      plain("PTIMER.DENOMINATOR", pt::DENOMINATOR, ptimer_den_),
      plain("PTIMER.ALARM_0", pt::ALARM_0, ptimer_alarm_),  // stored; a VM's alarm is never raised
      constant("PUNITS.FBP_COUNT", regs::punits::FBP_COUNT, FBP_COUNT),
      constant("PUNITS.FBP_DISABLED_MASK", regs::punits::FBP_DISABLED_MASK, FBP_NONE_DISABLED),
      sensitive(
          "MMU.CTRL", mmu::CTRL, [](uint32_t) { return MMU_CTRL_READY; }, IGNORED),
      plain("MMU.INVALIDATE_PDB", mmu::INVALIDATE_PDB, mmu_invalidate_pdb),
      rw1c("PFIFO.INTR", pf::INTR, pfifo_intr_),
      plain("PFIFO.INTR_EN", pf::INTR_EN, pfifo_intr_en_),
      plain("PFIFO.CTRL", pf::CTRL, pfifo_ctrl_, pf::CtrlEnable::mask),
      plain("PFIFO.PBDMA_ENABLE", pf::PBDMA_ENABLE, pbdma_enable_, regs::ALL_PBDMA),
      plain("PFIFO.RUNLIST_BASE", pf::RUNLIST_BASE, runlist_base),
      constant("PFIFO.RUNLIST_STATUS", pf::RUNLIST_STATUS, RUNLIST_IDLE),
      rw1c("PFIFO.RUNLIST_INTR", pf::RUNLIST_INTR, runlist_intr_),
      read_only("PFIFO.CHAN_TABLE_ERROR", pf::CHAN_TABLE_ERROR, [this](uint32_t) { return chan_table_error_; }),
      rw1c("PFIFO.FAULT_UNIT_PENDING", pf::FAULT_UNIT_PENDING, fault_pending_),
      plain("PFIFO.NONSTALL_ENGINE", pf::NONSTALL_ENGINE, nonstall_engine_, 0),  // per channel instead (D14)
      // Stored; reads never pending: the host preempts the physical channel
      // itself when the VM unbinds it.
      plain("PFIFO.PREEMPT", pf::PREEMPT, preempt_, pf::PreemptChid::mask),
      rw1c("PFIFO.CHAN_ERROR_PENDING", pf::CHAN_ERROR_PENDING, chan_error_pending_.words.data()),
      rw1c("PFIFO.NONSTALL_PENDING", pf::NONSTALL_PENDING, nonstall_pending_.words.data()),
      // Writing 0 clears the record (code, method, address).
      sensitive(
          "PFIFO.CHAN_ERROR", pf::CHAN_ERROR, [this](uint32_t c) { return error_code_[c]; },
          [this](uint32_t c, uint32_t x) {
            if (x == 0) error_code_[c] = error_method_[c] = error_addr_lo_[c] = error_addr_hi_[c] = 0;
          }),
      read_array("PFIFO.CHAN_ERROR_METHOD", pf::CHAN_ERROR_METHOD, error_method_.data()),
      read_array("PFIFO.CHAN_ERROR_ADDR_LO", pf::CHAN_ERROR_ADDR_LO, error_addr_lo_.data()),
      read_array("PFIFO.CHAN_ERROR_ADDR_HI", pf::CHAN_ERROR_ADDR_HI, error_addr_hi_.data()),
      read_array("PFIFO.FAULT_INST", pf::FAULT_INST, fault_inst_.data()),
      read_array("PFIFO.FAULT_VA_LO", pf::FAULT_VA_LO, fault_va_lo_.data()),
      read_array("PFIFO.FAULT_VA_HI", pf::FAULT_VA_HI, fault_va_hi_.data()),
      read_array("PFIFO.FAULT_TYPE", pf::FAULT_TYPE, fault_type_.data()),
  };
}

uint32_t VirtualRegisters::intr0() const {
  namespace intr = pmc::intr;
  uint32_t v = 0;
  if (pfifo_intr_ & pfifo_intr_en_) v |= intr::Pfifo::mask;
  if (pbus_intr_ & pbus_intr_en_) v |= intr::Pbus::mask;
  if (ptimer_intr_ & ptimer_intr_en_) v |= intr::Ptimer::mask;
  return v;
}

bool VirtualRegisters::line() const { return pmc::IntrEnHardware::get(pmc_intr_en_) && (intr0() & pmc_intr_mask_); }

void VirtualRegisters::raise_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word,
                                           uint64_t addr) {
  error_code_[gchid] = pf::ChanErrorCode::make(static_cast<uint32_t>(code));
  error_method_[gchid] = method_word;
  error_addr_lo_[gchid] = lo32(addr);
  error_addr_hi_[gchid] = hi32(addr);
  chan_error_pending_.set(gchid);
  pfifo_intr_ |= pf::IntrChannelError::mask;
  count_raised(regs::pci::MsiVector::error, pf::IntrChannelError::mask);
}

void VirtualRegisters::record_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t inst, uint64_t va,
                                    bool write, std::optional<uint32_t> gchid) {
  const auto u = static_cast<uint32_t>(unit);
  fault_inst_[u] = pf::FaultInstAddr::make(static_cast<uint32_t>(inst >> pf::CHAN_INST_SHIFT));
  fault_va_lo_[u] = lo32(va);
  fault_va_hi_[u] = hi32(va);
  fault_type_[u] = pf::FaultReason::make(static_cast<uint32_t>(reason)) | pf::FaultWrite::make(write) |
                   (gchid ? pf::FaultChid::make(*gchid) | pf::FaultChidValid::mask : 0);
  fault_pending_ |= 1u << u;
  pfifo_intr_ |= pf::IntrMmuFault::mask;
}

void VirtualRegisters::count_raised(regs::pci::MsiVector v, uint32_t pfifo_bit) {
  const bool delivered = (pfifo_intr_en_ & pfifo_bit) && pmc::IntrEnHardware::get(pmc_intr_en_) &&
                         (pmc_intr_mask_ & pmc::intr::Pfifo::mask);
  if (delivered) ++raised_[static_cast<size_t>(v)];
}

void VirtualRegisters::raise_nonstall(uint32_t gchid) {
  nonstall_pending_.set(gchid);
  pfifo_intr_ |= pf::IntrNonStall::mask;
  count_raised(regs::pci::MsiVector::nonstall, pf::IntrNonStall::mask);
}

void VirtualRegisters::table_error(pf::ChanTableError code) {
  chan_table_error_ = static_cast<uint32_t>(code);
  pfifo_intr_ |= pf::IntrChanTableError::mask;
}

void VirtualRegisters::mmio_fault() { pbus_intr_ |= pbus::IntrMmioFault::mask; }

void VirtualRegisters::runlist_done() {
  runlist_intr_ |= pf::RunlistIntrDone::mask;
  pfifo_intr_ |= pf::IntrRunlist::mask;
}

void VirtualRegisters::reset_pfifo() {
  pfifo_intr_ = pfifo_intr_en_ = pfifo_ctrl_ = 0;
  userd_base = runlist_base = runlist_intr_ = chan_table_error_ = fault_pending_ = preempt_ = 0;
  error_code_ = error_method_ = error_addr_lo_ = error_addr_hi_ = {};
  fault_inst_ = fault_va_lo_ = fault_va_hi_ = fault_type_ = {};
  chan_error_pending_.clear();
  nonstall_pending_.clear();
}

}  // namespace vgpu::mediator
