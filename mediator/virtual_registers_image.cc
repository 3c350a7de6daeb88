// SPDX-License-Identifier: GPL-2.0-or-later
// VirtualRegisters in the migration image (docs/migration.md §2, class I):
// every field in one fixed order. The order is the format: a new field is
// added at the end of visit_fields and the image version goes up.
#include <array>
#include <cstdint>

#include "mediator/virtual_registers.h"

namespace vgpu::mediator {
namespace {

// Fields this codec knows: a new one changes the size and stops the build
// here until it joins visit_fields (docs/migration.md §14, M1's risk).
constexpr size_t KNOWN_WORDS = 5 + 19;
constexpr size_t KNOWN_BYTES = KNOWN_WORDS * sizeof(uint32_t) + 4 * regs::NUM_CHANNELS * sizeof(uint32_t) +
                               4 * regs::pfifo::NUM_FAULT_UNITS * sizeof(uint32_t) +
                               2 * regs::CHANNEL_WORDS * sizeof(uint32_t) + regs::pci::MSI_VECTORS * sizeof(uint64_t);
static_assert(sizeof(VirtualRegisters) == KNOWN_BYTES, "a VirtualRegisters field is missing from visit_fields");

}  // namespace

template <class Visit>
void VirtualRegisters::visit_fields(Visit&& v) {
  for (uint32_t* f : {&pmc_enable,      &pramin_window, &mmu_invalidate_pdb,
                      &userd_base,      &runlist_base,  &pmc_intr_en_,
                      &pmc_intr_mask_,  &pbdma_enable_, &boot_1_,
                      &pbus_intr_,      &pbus_intr_en_, &ptimer_intr_,
                      &ptimer_intr_en_, &ptimer_alarm_, &ptimer_num_,
                      &ptimer_den_,     &pfifo_intr_,   &pfifo_intr_en_,
                      &pfifo_ctrl_,     &runlist_intr_, &chan_table_error_,
                      &fault_pending_,  &preempt_})
    v(*f);
  v(nonstall_engine_);
  for (auto* a : {&error_code_, &error_method_, &error_addr_lo_, &error_addr_hi_})
    for (uint32_t& f : *a) v(f);
  for (auto* a : {&fault_inst_, &fault_va_lo_, &fault_va_hi_, &fault_type_})
    for (uint32_t& f : *a) v(f);
  for (uint32_t& f : chan_error_pending_.words) v(f);
  for (uint32_t& f : nonstall_pending_.words) v(f);
  for (uint64_t& f : raised_) v(f);
}

void VirtualRegisters::save(Writer& w) const {
  // visit_fields only reads through the references here.
  const_cast<VirtualRegisters*>(this)->visit_fields([&w](auto& f) { w.field(f); });
}

bool VirtualRegisters::restore(Reader& r) {
  VirtualRegisters next = *this;
  next.visit_fields([&r](auto& f) { r.field(f); });
  if (!r.ok()) return false;
  *this = next;
  return true;
}

}  // namespace vgpu::mediator
