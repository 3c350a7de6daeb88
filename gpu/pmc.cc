// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/pmc.h"

namespace vgpu::gpu {

using namespace regs::pmc;

bool Pmc::line() const { return IntrEnHardware::get(intr_en_) && (intr_0() & intr_mask_) != 0; }

bool Pmc::delivers(uint32_t unit) const { return IntrEnHardware::get(intr_en_) && (intr_mask_ & unit) != 0; }

std::vector<RegRow> Pmc::registers() {
  return {
      constant("PMC.BOOT_0", BOOT_0, BOOT_0_VALUE),
      // Writes that would select big endian are ignored: the device is little endian only.
      plain("PMC.BOOT_1", BOOT_1, boot_1_, 0),
      read_only("PMC.INTR_0", INTR_0, [this](uint32_t) { return intr_0(); }),
      plain("PMC.INTR_EN_0", INTR_EN_0, intr_en_, IntrEnHardware::mask),
      sensitive("PMC.ENABLE", ENABLE, enable_,
                [this](uint32_t, uint32_t v) {
                  const uint32_t before = enable_;
                  enable_ = v & enable::ALL;
                  if (hooks_.enable_changed) hooks_.enable_changed(before, enable_);
                }),
      plain("PMC.PBDMA_ENABLE", PBDMA_ENABLE, pbdma_enable_, regs::ALL_PBDMA),
      plain("PMC.INTR_MASK_0", INTR_MASK_0, intr_mask_, UNIT_INTR_BITS),
  };
}

}  // namespace vgpu::gpu
