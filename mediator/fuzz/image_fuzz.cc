// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `image` (docs/migration.md §3): a migration image, read by
// a fresh vGPU's import_image on the destination. Every input is either
// refused with a message or imported; an imported one exports again to an
// image that decodes, and the vGPU still answers the guest. A crash, a
// sanitizer report or a broken round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "driver/port.h"
#include "mediator/vgpu.h"
#include "mediator/vgpu_image.h"
#include "testbed/testbed.h"

namespace {

constexpr uint64_t VM_VRAM = 64 * vgpu::MiB;

vgpu::testbed::Testbed& fixture() {
  static std::unique_ptr<vgpu::testbed::Testbed> tb = [] {
    vgpu::testbed::TestbedConfig tc;
    tc.mode = vgpu::testbed::Mode::fv_opt;
    tc.vram_per_vm = VM_VRAM;
    tc.log = [](vgpu::LogKind, const std::string&) {};
    auto made = vgpu::testbed::Testbed::create(tc);
    if (!made) std::abort();
    return std::move(*made);
  }();
  return *tb;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::testbed::Testbed& tb = fixture();
  vgpu::mediator::Vgpu& v = *tb.vgpu(0);
  // A fresh device for each input, as the destination's is.
  tb.port(0).write32(vgpu::driver::Bar::bar0, vgpu::regs::pmc::ENABLE.offset, 0);
  tb.port(0).write32(vgpu::driver::Bar::bar0, vgpu::regs::pmc::ENABLE.offset, vgpu::regs::pmc::enable::ALL);
  if (!v.import_image(std::span(data, size))) return 0;
  auto again = v.export_image();
  if (!again || !vgpu::mediator::decode_image(*again)) std::abort();
  (void)tb.port(0).read32(vgpu::driver::Bar::bar0, vgpu::regs::pmc::INTR_0.offset);
  return 0;
}
