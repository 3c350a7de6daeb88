// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/pmc.h"

namespace vgpu::gpu {

using namespace regs::pmc;

bool Pmc::line() const { return IntrEnHardware::get(intr_en_) && (intr_0() & intr_mask_) != 0; }

void Pmc::add_registers(RegisterFile& rf) {
  rf.add(constant_ro("PMC.BOOT_0", BOOT_0, Gate::none, BOOT_0_VALUE));
  // Writes that would select big endian are ignored: the device is little endian only.
  rf.add(stored_rw("PMC.BOOT_1", BOOT_1, Gate::none, boot_1_, 0));
  rf.add(RegRecord{"PMC.INTR_0", single(INTR_0), Access::ro, Gate::none,
                   [this](uint32_t) { return intr_0(); }, nullptr});
  rf.add(stored_rw("PMC.INTR_EN_0", INTR_EN_0, Gate::none, intr_en_, IntrEnHardware::mask));
  rf.add(RegRecord{"PMC.ENABLE", single(ENABLE), Access::rw, Gate::none,
                   [this](uint32_t) { return enable_; },
                   [this](uint32_t, uint32_t v) {
                     const uint32_t before = enable_;
                     enable_ = v & enable::ALL;
                     if (hooks_.enable_changed) hooks_.enable_changed(before, enable_);
                   }});
  rf.add(stored_rw("PMC.PBDMA_ENABLE", PBDMA_ENABLE, Gate::none, pbdma_enable_, regs::ALL_PBDMA));
  rf.add(stored_rw("PMC.INTR_MASK_0", INTR_MASK_0, Gate::none, intr_mask_, UNIT_INTR_BITS));
}

}  // namespace vgpu::gpu
