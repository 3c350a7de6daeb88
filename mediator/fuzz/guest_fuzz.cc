// SPDX-License-Identifier: GPL-2.0-or-later
// All five guest-program targets in one program (docs/fuzzing.md), the
// surface named by VGPU_FUZZ_SURFACE (bar, pushbuf, pagetable, pv,
// device): one binary to carry to a machine that runs long campaigns.
// An input means the same here as in the surface's own target.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "mediator/fuzz/guest_program.h"

namespace {

vgpu::fuzz::Surface surface() {
  using vgpu::fuzz::Surface;
  const char* env = std::getenv("VGPU_FUZZ_SURFACE");
  const std::string_view name = env ? env : "";
  if (name == "bar") return Surface::bar;
  if (name == "pushbuf") return Surface::pushbuf;
  if (name == "pagetable") return Surface::pagetable;
  if (name == "pv") return Surface::pv;
  if (name == "device") return Surface::device;
  std::fprintf(stderr, "guest_fuzz: VGPU_FUZZ_SURFACE='%s' is not one of bar, pushbuf, pagetable, pv, device\n",
               env ? env : "");
  std::exit(2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const vgpu::fuzz::Surface s = surface();
  vgpu::fuzz::run_guest_program(s, data, size);
  return 0;
}
