// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `device` (docs/fuzzing.md): the device model alone (pass-through, no mediator): every operation of the
// other targets straight on the GPU model. The input is a guest program (mediator/fuzz/guest_program.h); in the
// mediated modes a victim VM's work and memory are checked after it.
#include <cstddef>
#include <cstdint>

#include "mediator/fuzz/guest_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::fuzz::run_guest_program(vgpu::fuzz::Surface::device, data, size);
  return 0;
}
