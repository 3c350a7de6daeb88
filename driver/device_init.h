// SPDX-License-Identifier: GPL-2.0-or-later
// Device bring-up, in nouveau's order: identity (PMC BOOT_0), unit enables
// (PMC ENABLE), interrupt routing, and VRAM size discovery (FBP count,
// disabled mask, MiB per FBPA).
#pragma once

#include <cstdint>

#include "common/error.h"
#include "driver/port.h"

namespace vgpu::driver {

struct DeviceInfo {
  uint32_t boot0 = 0;
  uint32_t chipset = 0;
  uint32_t stepping = 0;
  uint32_t fbp_count = 0;
  uint64_t vram_bytes = 0;
};

// BOOT_0 must name a GF100; anything else (all ones from an absent device
// included) is unsupported.
[[nodiscard]] Result<DeviceInfo> identify(Port& port);
// Take every unit out of reset and enable the PBDMAs.
void enable_units(Port& port);
// Clear stale interrupts and route PFIFO, PGRAPH, PTIMER and PBUS ones.
void setup_interrupts(Port& port);
// Sum of the MiB behind each enabled frame-buffer partition.
[[nodiscard]] Result<uint64_t> probe_vram(Port& port);

// All of the above.
[[nodiscard]] Result<DeviceInfo> init_device(Port& port);

}  // namespace vgpu::driver
