// SPDX-License-Identifier: GPL-2.0-or-later
#include "channels/guest_instance.h"

#include "common/text.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::channels {
namespace {

namespace inst = regs::inst;
namespace ramfc = regs::ramfc;

// RAMFC occupies the instance block below the page directory base.
constexpr uint32_t RAMFC_BYTES = inst::PDB_LO;

std::unexpected<Error> bad(uint64_t at, const char* what, uint64_t value) {
  return fail(Errc::invalid_argument, strfmt("instance block %s: %s (%s)", hex(at).c_str(), what, hex(value).c_str()));
}

}  // namespace

Result<GuestInstance> read_guest_instance(const shadow::GuestMemory& guest, uint64_t at) {
  const shadow::Partition& part = guest.partition();
  if (at % inst::ALIGN != 0 || !part.contains(at, inst::SIZE))
    return bad(at, "not an aligned block inside the VM's VRAM", at);

  auto word = [&](uint32_t off) { return guest.read32(at + off).value_or(0); };
  GuestInstance g{};
  g.inst = at;

  const uint32_t pdb_lo = word(inst::PDB_LO);
  g.pd = (uint64_t{inst::PdbAddrHi::get(word(inst::PDB_HI))} << 32) | (pdb_lo & inst::PdbAddrLo::mask);
  if (inst::PdbTarget::get(pdb_lo) != uint32_t(fmt::Target::vram))
    return bad(at, "page directory not in VRAM", pdb_lo);
  if (!part.contains(g.pd, fmt::PD.table_bytes()))
    return bad(at, "page directory outside the VM's VRAM", g.pd);

  g.limit = join64(word(inst::LIMIT_HI), word(inst::LIMIT_LO));
  if (g.limit == 0 || g.limit >= fmt::VA_LIMIT)
    return bad(at, "address-space limit out of range", g.limit);

  if (ramfc::SignatureValue::get(word(ramfc::SIGNATURE)) != ramfc::SIGNATURE_VALUE)
    return bad(at, "RAMFC signature", word(ramfc::SIGNATURE));

  const uint32_t gp_hi = word(ramfc::GP_BASE_HI);
  g.gp_base = (uint64_t{ramfc::GpBaseHiAddr::get(gp_hi)} << 32) | word(ramfc::GP_BASE);
  const uint32_t limit2 = ramfc::GpBaseHiLimit2::get(gp_hi);
  if (g.gp_base % ramfc::GP_ENTRY_BYTES != 0)
    return bad(at, "GPFIFO ring not 8-byte aligned", g.gp_base);
  if (limit2 > ramfc::MAX_LIMIT2) return bad(at, "GPFIFO ring too large (log2 entries)", limit2);
  g.ring_entries = uint32_t{1} << limit2;

  const uint32_t userd_lo = word(ramfc::USERD_LO);
  g.userd = join64(word(ramfc::USERD_HI), userd_lo & ~ramfc::UserdTarget::mask);
  if (ramfc::UserdTarget::get(userd_lo) != uint32_t(fmt::Target::vram))
    return bad(at, "USERD not in VRAM", userd_lo);
  if (!part.contains(g.userd, regs::userd::SIZE))
    return bad(at, "USERD page outside the VM's VRAM", g.userd);
  return g;
}

void write_shadow_instance(gpu::Vram& vram, uint64_t shadow_inst, const shadow::GuestMemory& guest,
                           const GuestInstance& g, uint64_t shadow_pd, uint64_t host_userd) {
  for (uint32_t off = 0; off < RAMFC_BYTES; off += sizeof(uint32_t))
    vram.write32(shadow_inst + off, guest.read32(g.inst + off).value_or(0));
  vram.write32(shadow_inst + ramfc::USERD_LO, lo32(host_userd) | ramfc::UserdTarget::make(uint32_t(fmt::Target::vram)));
  vram.write32(shadow_inst + ramfc::USERD_HI, hi32(host_userd));
  // The physical channel starts where the host's USERD page says: empty.
  vram.write32(shadow_inst + ramfc::GP_PUT, 0);
  vram.write32(shadow_inst + ramfc::GP_GET, 0);
  vram.write32(shadow_inst + inst::PDB_LO,
               (lo32(shadow_pd) & inst::PdbAddrLo::mask) | inst::PdbTarget::make(uint32_t(fmt::Target::vram)));
  vram.write32(shadow_inst + inst::PDB_HI, inst::PdbAddrHi::make(hi32(shadow_pd)));
  vram.write32(shadow_inst + inst::LIMIT_LO, lo32(g.limit));
  vram.write32(shadow_inst + inst::LIMIT_HI, hi32(g.limit));
}

}  // namespace vgpu::channels
