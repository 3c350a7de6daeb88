// SPDX-License-Identifier: GPL-2.0-or-later
// The address space an instance block names: page directory base and
// limit at regs::inst::PDB_LO..LIMIT_HI (fermi.md 2.2). Channels (PFIFO)
// and BAR1/BAR3 (PBUS BAR*_INST) read it the same way.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

struct InstanceSpace {
  uint64_t pdb;     // page directory VRAM address
  uint64_t limit;   // last valid VA byte
};

// invalid_argument: inst misaligned or beyond VRAM; unsupported: the page
// directory is not in VRAM (sysmem page directories are not modeled).
[[nodiscard]] Result<InstanceSpace> read_instance_space(const Vram& vram, uint64_t inst);

}  // namespace vgpu::gpu
