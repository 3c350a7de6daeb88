// SPDX-License-Identifier: GPL-2.0-or-later
// Reading the address-space part of an instance block (regs::inst): the
// page directory base and the VA limit, shared by the BARs and channels.
#pragma once

#include <cstdint>

#include "gpu/mem/vram.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

struct InstanceSpace {
  uint32_t pdb_target;   // fmt::Target encoding
  uint64_t pdb;          // page directory VRAM address
  uint64_t limit;        // last valid VA byte
};

inline InstanceSpace read_instance_space(const Vram& vram, uint64_t inst) {
  using namespace regs::inst;
  const uint32_t lo = vram.read32(inst + PDB_LO);
  const uint32_t hi = vram.read32(inst + PDB_HI);
  const uint64_t pdb = (uint64_t{PdbAddrHi::get(hi)} << 32) | (lo & PdbAddrLo::mask);
  const uint64_t limit = join64(vram.read32(inst + LIMIT_HI), vram.read32(inst + LIMIT_LO));
  return InstanceSpace{PdbTarget::get(lo), pdb, limit};
}

}  // namespace vgpu::gpu
