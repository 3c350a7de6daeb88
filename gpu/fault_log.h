// SPDX-License-Identifier: GPL-2.0-or-later
// MMU fault reporting: one FAULT_INFO record per fault unit and the
// FAULT_UNIT_PENDING mask (PFIFO INTR MmuFault while any bit is set).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/reg_table.h"
#include "gpu/mem/mmu.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

class FaultLog {
 public:
  std::vector<RegRow> registers();
  // Record a fault in its unit's slot (model lock held). A newer fault
  // replaces an older one in the same unit.
  void record(const Fault& f);
  bool pending() const { return pending_ != 0; }
  void reset();

  struct Info {
    uint32_t inst = 0;
    uint32_t va_lo = 0;
    uint32_t va_hi = 0;
    uint32_t type = 0;
  };
  const Info& info(regs::FaultUnit unit) const { return info_[static_cast<uint32_t>(unit)]; }

 private:
  std::array<Info, regs::pfifo::NUM_FAULT_UNITS> info_{};
  uint32_t pending_ = 0;
};

}  // namespace vgpu::gpu
