// SPDX-License-Identifier: GPL-2.0-or-later
// A guest channel's instance block, validated: where its page directory,
// GPFIFO ring and USERD page are. Then its shadow: a physical instance
// block in reserved VRAM whose RAMFC is the guest's, but whose page
// directory is the shadow one and whose USERD is the host's page for the
// physical channel. Nothing of the guest's reaches the physical GPU
// without passing read_guest_instance().
#pragma once

#include <cstdint>

#include "common/error.h"
#include "shadow/guest_memory.h"

namespace vgpu::channels {

struct GuestInstance {
  uint64_t inst;          // guest VRAM address of the instance block
  uint64_t pd;            // guest VRAM address of its page directory
  uint64_t limit;         // last valid VA byte
  uint64_t gp_base;       // GPFIFO ring VA
  uint32_t ring_entries;  // power of two
  uint64_t userd;         // guest VRAM address of its USERD page
};

// Checks: block aligned and inside the partition; page directory in VRAM,
// aligned, wholly inside the partition; RAMFC signature; ring aligned and
// sized within the limits; USERD page in VRAM inside the partition. The
// error names the field and the offending address.
Result<GuestInstance> read_guest_instance(const shadow::GuestMemory& guest, uint64_t inst);

// Write the physical instance block at `shadow_inst` (host VRAM).
void write_shadow_instance(gpu::Vram& vram, uint64_t shadow_inst, const shadow::GuestMemory& guest,
                           const GuestInstance& g, uint64_t shadow_pd, uint64_t host_userd);

}  // namespace vgpu::channels
