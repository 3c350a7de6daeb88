// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target `pagetable` (docs/fuzzing.md): page directory and table entries as the shadow walker reads them (VRAM and
// sysmem PTEs, foreign and out-of-range targets, any flags), invalidates, copies and launches over them (DMA). The
// input is a guest program (mediator/fuzz/guest_program.h); in the mediated modes a victim VM's work and memory are
// checked after it.
#include <cstddef>
#include <cstdint>

#include "mediator/fuzz/guest_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu::fuzz::run_guest_program(vgpu::fuzz::Surface::pagetable, data, size);
  return 0;
}
