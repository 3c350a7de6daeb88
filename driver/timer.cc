// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/timer.h"

#include "vgpu/regs.h"

namespace vgpu::driver {

uint64_t read_time_ns(Port& port) {
  namespace t = regs::ptimer;
  for (;;) {
    const uint32_t hi = port.read32(Bar::bar0, t::TIME_1.offset);
    const uint32_t lo = port.read32(Bar::bar0, t::TIME_0.offset);
    if (port.read32(Bar::bar0, t::TIME_1.offset) == hi) return join64(t::Time1Count::get(hi), lo);
  }
}

}  // namespace vgpu::driver
