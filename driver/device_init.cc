// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/device_init.h"

#include "driver/msg.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace r = regs;

// FBP_DISABLED_MASK has one bit per partition.
constexpr uint32_t MAX_FBPS = 32;

Result<DeviceInfo> identify(Port& port) {
  DeviceInfo info;
  info.boot0 = port.read32(Bar::bar0, r::pmc::BOOT_0.offset);
  info.chipset = r::pmc::Boot0Chipset::get(info.boot0);
  info.stepping = r::pmc::Boot0Stepping::get(info.boot0);
  if (info.chipset != r::CHIPSET_GF100)
    return fail(Errc::unsupported, msg("{}: BOOT_0 {} names chipset {}, not GF100 ({})", port.name(), hex(info.boot0),
                                       hex(info.chipset), hex(r::CHIPSET_GF100)));
  return info;
}

void enable_units(Port& port) {
  port.write32(Bar::bar0, r::pmc::ENABLE.offset, r::pmc::enable::ALL);
  port.write32(Bar::bar0, r::pmc::PBDMA_ENABLE.offset, r::ALL_PBDMA);
}

void setup_interrupts(Port& port) {
  port.write32(Bar::bar0, r::pfifo::INTR.offset, ~0u);  // RW1C: drop anything stale
  port.write32(Bar::bar0, r::pfifo::INTR_EN.offset,
               r::pfifo::IntrChanTableError::mask | r::pfifo::IntrMmuFault::mask | r::pfifo::IntrChannelError::mask |
                   r::pfifo::IntrRunlist::mask | r::pfifo::IntrNonStall::mask);
  port.write32(Bar::bar0, r::pbus::INTR.offset, ~0u);
  port.write32(Bar::bar0, r::pbus::INTR_EN.offset, r::pbus::IntrMmioFault::mask);
  port.write32(Bar::bar0, r::pmc::INTR_MASK_0.offset,
               r::pmc::intr::Pfifo::mask | r::pmc::intr::Pgraph::mask | r::pmc::intr::Ptimer::mask |
                   r::pmc::intr::Pbus::mask);
  port.write32(Bar::bar0, r::pmc::INTR_EN_0.offset, r::pmc::IntrEnHardware::mask);
}

Result<uint64_t> probe_vram(Port& port) {
  const uint32_t count = port.read32(Bar::bar0, r::punits::FBP_COUNT.offset);
  const uint32_t disabled = port.read32(Bar::bar0, r::punits::FBP_DISABLED_MASK.offset);
  if (count == 0 || count > MAX_FBPS)
    return fail(Errc::device_error, msg("{}: FBP_COUNT {} out of range", port.name(), count));
  uint64_t mib = 0;
  for (uint32_t fbp = 0; fbp < count; ++fbp) {
    if (disabled & (1u << fbp)) continue;
    mib += port.read32(Bar::bar0, r::pfb::FBPA_MIB[fbp].offset);
  }
  if (mib == 0) return fail(Errc::device_error, msg("{}: no VRAM behind {} FBPs", port.name(), count));
  return mib * MiB;
}

Result<DeviceInfo> init_device(Port& port) {
  auto info = identify(port);
  if (!info) return info;
  enable_units(port);
  setup_interrupts(port);
  auto vram = probe_vram(port);
  if (!vram) return std::unexpected(vram.error());
  info->fbp_count = port.read32(Bar::bar0, r::punits::FBP_COUNT.offset);
  info->vram_bytes = *vram;
  return info;
}

}  // namespace vgpu::driver
