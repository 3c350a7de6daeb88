// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `pushbuf` (docs/fuzzing.md): push buffers of methods of every class (host, copy, compute; any subchannel,
// any header form), raw GPFIFO entries, doorbells with any GP_PUT, raw channels, launches with raw arguments. The input
// is a guest program (mediator/fuzz/guest_program.h); in the mediated modes a victim VM's work and memory are checked
// after it.
#include <cstddef>
#include <cstdint>

#include "mediator/fuzz/guest_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::fuzz::run_guest_program(vgpu::fuzz::Surface::pushbuf, data, size);
  return 0;
}
