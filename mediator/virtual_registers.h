// SPDX-License-Identifier: GPL-2.0-or-later
// A vGPU's virtual BAR0 state: the registers each VM has for itself (its
// interrupt enables and status, its PFIFO control, its timer settings) and
// the records of what happened to it (channel errors, faults, non-stall
// interrupts), with the interrupt line they drive. Nothing here touches
// the physical GPU: registers that need it are the vGPU's sensitive rows,
// declared by the vGPU around these (mediator/vgpu_regs.cc).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/reg_table.h"
#include "common/wire_codec.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {

class VirtualRegisters {
 public:
  // The rows of every register that is plain per-VM state (no handler).
  std::vector<RegRow> plain_rows();

  // PMC INTR_0 as the VM sees it, and its interrupt line.
  uint32_t intr0() const;
  bool line() const;

  // ---- what happened to the VM
  void raise_channel_error(uint32_t gchid, regs::ChannelError code, uint32_t method_word, uint64_t addr);
  void record_fault(regs::FaultUnit unit, regs::FaultReason reason, uint64_t inst, uint64_t va, bool write,
                    std::optional<uint32_t> gchid);
  void raise_nonstall(uint32_t gchid);
  void table_error(regs::pfifo::ChanTableError code);  // CHAN_TABLE_ERROR and its interrupt
  void mmio_fault();                                   // PBUS MMIO fault (a BAR or PRAMIN access refused)
  void runlist_done();                                 // RUNLIST_INTR done and its interrupt
  bool channel_errored(uint32_t gchid) const { return chan_error_pending_.test(gchid); }
  // Per message vector: the non-stall interrupts and channel errors raised
  // while deliverable (PFIFO INTR_EN, PMC INTR_EN_0 and INTR_MASK_0),
  // counted from the start; each sends a message (spec §11.6).
  const std::array<uint64_t, regs::pci::MSI_VECTORS>& raised() const { return raised_; }

  // Every field, in one fixed order, for the migration image
  // (virtual_registers_image.cc). restore() takes all or nothing: on a
  // short or bad record it returns false and leaves the registers as they were.
  void save(Writer& w) const;
  [[nodiscard]] bool restore(Reader& r);

  // PMC.ENABLE cleared PFIFO: the PFIFO state and every record go.
  void reset_pfifo();

  // ---- registers the vGPU's sensitive rows keep here
  uint32_t pmc_enable = regs::pmc::enable::ALL;
  uint32_t pramin_window = 0;
  uint32_t mmu_invalidate_pdb = 0;
  uint32_t userd_base = 0;
  uint32_t runlist_base = 0;

 private:
  uint32_t pmc_intr_en_ = 0;
  uint32_t pmc_intr_mask_ = ~uint32_t{0};
  uint32_t pbdma_enable_ = 0;
  uint32_t boot_1_ = 0;
  uint32_t pbus_intr_ = 0, pbus_intr_en_ = 0;
  uint32_t ptimer_intr_ = 0, ptimer_intr_en_ = 0, ptimer_alarm_ = 0, ptimer_num_ = 0, ptimer_den_ = 0;
  uint32_t pfifo_intr_ = 0, pfifo_intr_en_ = 0, pfifo_ctrl_ = 0;
  uint32_t runlist_intr_ = 0;
  uint32_t chan_table_error_ = 0;
  uint32_t fault_pending_ = 0;
  uint32_t preempt_ = 0;
  uint32_t nonstall_engine_ = 0;
  // Each record field as an array, so that one row serves every channel
  // (CHAN_ERROR*) or fault unit (FAULT_*).
  std::array<uint32_t, regs::NUM_CHANNELS> error_code_{}, error_method_{}, error_addr_lo_{}, error_addr_hi_{};
  std::array<uint32_t, regs::pfifo::NUM_FAULT_UNITS> fault_inst_{}, fault_va_lo_{}, fault_va_hi_{}, fault_type_{};
  regs::ChannelBits chan_error_pending_;
  regs::ChannelBits nonstall_pending_;
  void count_raised(regs::pci::MsiVector v, uint32_t pfifo_bit);
  std::array<uint64_t, regs::pci::MSI_VECTORS> raised_{};  // never reset: compared for change
  // Calls v(field) for every field above, in the image's order (one list
  // for save and restore, virtual_registers_image.cc).
  template <class Visit>
  void visit_fields(Visit&& v);
};

}  // namespace vgpu::mediator
