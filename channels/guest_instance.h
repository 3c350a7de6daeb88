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
#include "vgpu/formats.h"

namespace vgpu::channels {

struct GuestInstance {
  uint64_t inst;               // guest VRAM address of the instance block
  fmt::ChannelInstance block;  // decoded, and valid by fmt::check_channel_instance
  uint64_t pd() const { return block.space.pdb; }
  uint32_t ring_entries() const { return block.ramfc.ring_entries(); }
};

// The rules of fmt::check_channel_instance, bounded by the partition. The
// error names the rule and the offending value.
Result<GuestInstance> read_guest_instance(const shadow::GuestMemory& guest, uint64_t inst);

// Write the physical instance block at `shadow_inst` (host VRAM).
void write_shadow_instance(gpu::Vram& vram, uint64_t shadow_inst, const shadow::GuestMemory& guest,
                           const GuestInstance& g, uint64_t shadow_pd, uint64_t host_userd);

}  // namespace vgpu::channels
