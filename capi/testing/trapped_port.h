// SPDX-License-Identifier: GPL-2.0-or-later
// The guest driver's port onto a C API backend, every BAR access trapped
// (as QEMU's hw/vgpu makes them with bar-remap off): nothing is mapped.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "capi/vgpu_capi.h"
#include "driver/port.h"
#include "vgpu/regs.h"

namespace vgpu::capi::testing {

class TrappedPort : public driver::Port {
 public:
  explicit TrappedPort(VgpuBackend* b) : b_(b) {}
  uint32_t read32(driver::Bar bar, uint64_t off) override {
    if (bar == driver::Bar::bar0) return vgpu_backend_bar0_read32(b_, static_cast<uint32_t>(off));
    return vgpu_backend_bar_read32(b_, to_c(bar), off);
  }
  void write32(driver::Bar bar, uint64_t off, uint32_t v) override {
    if (bar == driver::Bar::bar0) return vgpu_backend_bar0_write32(b_, static_cast<uint32_t>(off), v);
    vgpu_backend_bar_write32(b_, to_c(bar), off, v);
  }
  std::span<std::byte> map(driver::Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(driver::Bar bar) const override {
    return bar == driver::Bar::bar0 ? regs::pci::BAR0_SIZE : vgpu_backend_bar_size(b_, to_c(bar));
  }
  std::string name() const override { return "trapped capi"; }

 private:
  static VgpuBar to_c(driver::Bar b) { return b == driver::Bar::bar1 ? VGPU_BAR1 : VGPU_BAR3; }
  VgpuBackend* b_;
};

}  // namespace vgpu::capi::testing
