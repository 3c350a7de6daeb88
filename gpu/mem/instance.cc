// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/instance.h"

#include "gpu/mem/hex.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

Result<InstanceSpace> read_instance_space(const Vram& vram, uint64_t inst) {
  using namespace regs::inst;
  if (inst % ALIGN != 0 || !vram.contains(inst, SIZE))
    return fail(Errc::invalid_argument, "instance block " + hex(inst) + " is misaligned or beyond VRAM");
  const uint32_t lo = vram.read32(inst + PDB_LO);
  const uint32_t hi = vram.read32(inst + PDB_HI);
  if (PdbTarget::get(lo) != static_cast<uint32_t>(fmt::Target::vram))
    return fail(Errc::unsupported, "instance block " + hex(inst) + ": page directory not in VRAM");
  const uint64_t pdb = join64(PdbAddrHi::get(hi), PdbAddrLo::get(lo) << PdbAddrLo::lo);
  const uint64_t limit = join64(vram.read32(inst + LIMIT_HI), vram.read32(inst + LIMIT_LO));
  return InstanceSpace{pdb, limit};
}

}  // namespace vgpu::gpu
