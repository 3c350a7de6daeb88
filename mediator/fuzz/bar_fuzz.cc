// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `bar` (docs/fuzzing.md): BAR0/BAR1/BAR3 access sequences of one VM (register writes and reads, BAR1/BAR3
// words, PRAMIN, doorbells, invalidates, resets) in fv-naive, fv-opt or pv (the input's first byte). The input is a
// guest program (mediator/fuzz/guest_program.h); in the mediated modes a victim VM's work and memory are checked after
// it.
#include <cstddef>
#include <cstdint>

#include "mediator/fuzz/guest_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::fuzz::run_guest_program(vgpu::fuzz::Surface::bar, data, size);
  return 0;
}
