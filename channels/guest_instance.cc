// SPDX-License-Identifier: GPL-2.0-or-later
#include "channels/guest_instance.h"

#include "common/text.h"
#include "vgpu/regs.h"

namespace vgpu::channels {
namespace {

// RAMFC occupies the instance block below the page directory base.
constexpr uint32_t RAMFC_BYTES = regs::inst::PDB_LO;

}  // namespace

Result<GuestInstance> read_guest_instance(const shadow::GuestMemory& guest, uint64_t at) {
  const shadow::Partition& part = guest.partition();
  const auto inside = [&](uint64_t addr, uint64_t bytes) { return part.contains(addr, bytes); };
  const fmt::ChannelInstance c = inside(at, regs::inst::SIZE) ? fmt::decode_channel_instance(guest.reader(at))
                                                              : fmt::ChannelInstance{};
  if (auto bad = fmt::check_channel_instance(at, c, inside))
    return fail(Errc::invalid_argument,
                strfmt("instance block %s: %s", hex(at).c_str(), bad->message("the VM's VRAM").c_str()));
  return GuestInstance{at, c};
}

void write_shadow_instance(gpu::Vram& vram, uint64_t shadow_inst, const shadow::GuestMemory& guest,
                           const GuestInstance& g, uint64_t shadow_pd, uint64_t host_userd) {
  // The guest's RAMFC as it is (fields the device ignores included), then
  // what the mediator owns: the host's USERD page, an empty ring position
  // (the physical channel starts where that page says) and the shadow
  // page directory.
  for (uint32_t off = 0; off < RAMFC_BYTES; off += sizeof(uint32_t))
    vram.write32(shadow_inst + off, guest.read32(g.inst + off).value_or(0));
  fmt::Ramfc ramfc = g.block.ramfc;
  ramfc.userd = host_userd;
  ramfc.userd_target = uint32_t(fmt::Target::vram);
  ramfc.gp_get = ramfc.gp_put = 0;
  fmt::encode_ramfc(ramfc, vram.writer(shadow_inst));
  fmt::encode_address_space(fmt::AddressSpace{.pdb = shadow_pd, .limit = g.block.space.limit},
                            vram.writer(shadow_inst));
}

}  // namespace vgpu::channels
