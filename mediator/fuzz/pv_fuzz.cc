// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `pv` (docs/fuzzing.md): PV hypercall batches (slots of operations written in guest VRAM, DOORBELL,
// SLOT_BASE) in pv mode, with copies and fills over what they map. The input is a guest program
// (mediator/fuzz/guest_program.h); in the mediated modes a victim VM's work and memory are checked after it.
#include <cstddef>
#include <cstdint>

#include "mediator/fuzz/guest_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::fuzz::run_guest_program(vgpu::fuzz::Surface::pv, data, size);
  return 0;
}
