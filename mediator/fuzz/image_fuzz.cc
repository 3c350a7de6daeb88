// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `image` (docs/migration.md §3): a migration image, read by
// a fresh vGPU's import_image on the destination. Every input is either
// refused with a message or imported; an imported one exports again to an
// image that decodes, and the vGPU still answers the guest. A crash, a
// sanitizer report or a broken round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>

#include "driver/port.h"
#include "mediator/fuzz/image_fixture.h"
#include "mediator/vgpu.h"
#include "mediator/vgpu_image.h"

namespace {

constexpr uint64_t FREEZE_NS = 100'000'000;  // an imported channel the input keeps busy: no export check

vgpu::fuzz::ImageFixture& fixture() {
  static vgpu::fuzz::ImageFixture f = vgpu::fuzz::make_image_fixture();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::testbed::Testbed& tb = *fixture().tb;
  vgpu::mediator::Vgpu& v = *tb.vgpu(0);
  // A fresh device for each input, as the destination's is (the VRAM keeps
  // the fixture's channel structures).
  tb.port(0).write32(vgpu::driver::Bar::bar0, vgpu::regs::pmc::ENABLE.offset, 0);
  tb.port(0).write32(vgpu::driver::Bar::bar0, vgpu::regs::pmc::ENABLE.offset, vgpu::regs::pmc::enable::ALL);
  if (!v.import_image(std::span(data, size))) return 0;
  // Bound channels are exported from a frozen vGPU only.
  if (!v.freeze(FREEZE_NS)) return 0;
  auto again = v.export_image();
  v.thaw();
  // A channel the input left parked in an acquire or between slices: a
  // state the image does not carry yet, refused as such.
  if (!again && again.error().code == vgpu::Errc::unsupported) return 0;
  if (!again) {
    std::fprintf(stderr, "image: the export after an import failed: %s\n", again.error().what().c_str());
    std::abort();
  }
  if (auto decoded = vgpu::mediator::decode_image(*again); !decoded) {
    std::fprintf(stderr, "image: the exported image does not decode: %s\n", decoded.error().what().c_str());
    std::abort();
  }
  (void)tb.port(0).read32(vgpu::driver::Bar::bar0, vgpu::regs::pmc::INTR_0.offset);
  return 0;
}
