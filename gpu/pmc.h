// SPDX-License-Identifier: GPL-2.0-or-later
// PMC: identity, unit enables (PMC.ENABLE) and the interrupt summary.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/reg_table.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

class Pmc {
 public:
  // Called with the model lock held.
  struct Hooks {
    std::function<uint32_t()> unit_interrupts;  // INTR_0 bits pending in the units
    std::function<void(uint32_t before, uint32_t after)> enable_changed;
  };
  // The unit bits INTR_0 can report.
  static constexpr uint32_t UNIT_INTR_BITS = regs::pmc::intr::Pfifo::mask | regs::pmc::intr::Pgraph::mask |
                                             regs::pmc::intr::Ptimer::mask | regs::pmc::intr::Pbus::mask;

  explicit Pmc(Hooks hooks) : hooks_(std::move(hooks)) {}
  std::vector<RegRow> registers();

  // All of the ENABLE bits in `mask` set.
  bool enabled(uint32_t mask) const { return (enable_ & mask) == mask; }
  uint32_t intr_0() const { return hooks_.unit_interrupts() & UNIT_INTR_BITS; }
  // The interrupt line: hardware interrupts on and an unmasked unit pending.
  bool line() const;
  // Whether an interrupt of this unit (an intr:: mask) would reach the line.
  bool delivers(uint32_t unit) const;

 private:
  Hooks hooks_;
  uint32_t boot_1_ = 0;  // little endian only: always reads 0
  uint32_t intr_en_ = 0;
  uint32_t enable_ = 0;  // every unit starts in reset
  uint32_t pbdma_enable_ = 0;
  uint32_t intr_mask_ = UNIT_INTR_BITS;  // every unit delivered until masked
};

}  // namespace vgpu::gpu
