// SPDX-License-Identifier: GPL-2.0-or-later
// PBUS: bus interrupts, the PRAMIN window into VRAM, the BAR1/BAR3
// instance registers, and PFLUSH (BAR write flush).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/reg_table.h"
#include "gpu/gpu.h"
#include "gpu/mem/vram.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

class Pbus {
 public:
  // Called with the model lock held when BAR1_INST or BAR3_INST is written.
  using BarInstWritten = std::function<void(Bar bar, uint32_t value)>;

  Pbus(Vram& vram, BarInstWritten bar_inst_written) : vram_(vram), bar_inst_written_(std::move(bar_inst_written)) {}
  std::vector<RegRow> registers();

  void raise(uint32_t bits) { intr_ |= bits; }
  uint32_t pending() const { return intr_ & intr_en_; }
  uint32_t bar_inst(Bar bar) const { return bar == Bar::bar1 ? bar1_inst_ : bar3_inst_; }

  // VRAM address of a PRAMIN offset, or none if the window targets no VRAM.
  std::optional<uint64_t> pramin_addr(uint32_t index) const;

 private:
  Vram& vram_;
  BarInstWritten bar_inst_written_;
  uint32_t intr_ = 0;
  uint32_t intr_en_ = 0;
  uint32_t window_ = 0;
  uint32_t bar1_inst_ = 0;
  uint32_t bar3_inst_ = 0;
};

}  // namespace vgpu::gpu
