// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/pbus.h"

#include "vgpu/formats.h"

namespace vgpu::gpu {

using namespace regs::pbus;

namespace {
constexpr uint32_t WINDOW_BITS = PraminBase::mask | PraminTarget::mask;
constexpr uint32_t BAR_INST_BITS = BarInstAddr::mask | BarInstTarget::mask | BarInstMode::mask;
// The PRAMIN window as a register array of dwords.
constexpr RegArray32 PRAMIN_WORDS{regs::pramin::BASE, 4, regs::pramin::SIZE / 4};
// Writes complete at once, so a flush is never pending.
constexpr uint32_t FLUSH_IDLE = 0;
}  // namespace

std::optional<uint64_t> Pbus::pramin_addr(uint32_t index) const {
  if (PraminTarget::get(window_) != uint32_t(fmt::Target::vram)) return std::nullopt;
  return (uint64_t{PraminBase::get(window_)} << PRAMIN_BASE_SHIFT) + uint64_t{index} * 4;
}

std::vector<RegRow> Pbus::registers() {
  const auto bar_inst = [this](const char* name, Reg32 reg, Bar bar, uint32_t& storage) {
    return sensitive(name, reg, storage, [this, &storage, bar](uint32_t, uint32_t v) {
      storage = v & BAR_INST_BITS;
      if (bar_inst_written_) bar_inst_written_(bar, storage);
    });
  };
  return {
      rw1c("PBUS.INTR", INTR, intr_),
      plain("PBUS.INTR_EN", INTR_EN, intr_en_),
      plain("PBUS.PRAMIN_WINDOW", PRAMIN_WINDOW, window_, WINDOW_BITS),
      bar_inst("PBUS.BAR1_INST", BAR1_INST, Bar::bar1, bar1_inst_),
      bar_inst("PBUS.BAR3_INST", BAR3_INST, Bar::bar3, bar3_inst_),
      // A flush completes during the write: it always reads idle.
      sensitive(
          "PFLUSH.FLUSH", regs::pflush::FLUSH, [](uint32_t) { return FLUSH_IDLE; }, [](uint32_t, uint32_t) {}),
      sensitive(
          "PRAMIN", PRAMIN_WORDS,
          [this](uint32_t i) {
            const auto addr = pramin_addr(i);
            return addr ? vram_.read32(*addr) : ~0u;
          },
          [this](uint32_t i, uint32_t v) {
            if (const auto addr = pramin_addr(i)) (void)vram_.write32(*addr, v);
          }),
  };
}

}  // namespace vgpu::gpu
