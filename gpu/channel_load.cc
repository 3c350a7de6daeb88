// SPDX-License-Identifier: GPL-2.0-or-later
// Loading a channel on its first run: the instance block and RAMFC are
// validated (docs/spec/vgpu.md, "Channels") and the context built.
#include <cstdio>

#include "gpu/instance.h"
#include "gpu/pfifo.h"

namespace vgpu::gpu {

using namespace regs;

namespace {
struct RamfcCheck {
  const char* what;
  bool ok;
};
}  // namespace

Pfifo::Ran Pfifo::load(uint32_t chid, uint32_t chan_inst, ChannelRun& run) {
  const Vram& vram = d_.vram;
  const uint64_t inst = uint64_t{pfifo::ChanInstAddr::get(chan_inst)} << pfifo::CHAN_INST_SHIFT;
  const bool inst_ok = pfifo::ChanInstTarget::get(chan_inst) == uint32_t(fmt::Target::vram) &&
                       vram.contains(inst, inst::SIZE);
  const auto rd = [&](uint32_t off) { return inst_ok ? vram.read32(inst + off) : 0u; };

  const uint32_t gp_lo = rd(ramfc::GP_BASE);
  const uint32_t gp_hi = rd(ramfc::GP_BASE_HI);
  const uint32_t limit2 = ramfc::GpBaseHiLimit2::get(gp_hi);
  const uint32_t userd_lo = rd(ramfc::USERD_LO);
  const uint64_t userd = join64(rd(ramfc::USERD_HI), userd_lo & ~ramfc::UserdTarget::mask);
  const InstanceSpace space = inst_ok ? read_instance_space(vram, inst) : InstanceSpace{};

  // Each rule, in the order a driver would want to hear about it.
  const RamfcCheck checks[] = {
      {"instance block outside VRAM", inst_ok},
      {"RAMFC signature", ramfc::SignatureValue::get(rd(ramfc::SIGNATURE)) == ramfc::SIGNATURE_VALUE},
      {"GP_BASE alignment", gp_lo % ramfc::GP_ENTRY_BYTES == 0},
      {"GPFIFO LIMIT2", limit2 <= ramfc::MAX_LIMIT2},
      {"page directory target", space.pdb_target == uint32_t(fmt::Target::vram)},
      {"page directory outside VRAM", vram.contains(space.pdb, fmt::PD.table_bytes())},
      {"USERD target", ramfc::UserdTarget::get(userd_lo) == uint32_t(fmt::Target::vram)},
      {"USERD outside VRAM", vram.contains(userd, userd::SIZE)},
  };
  for (const RamfcCheck& c : checks) {
    if (c.ok) continue;
    std::fprintf(stderr, "vgpu: channel %u: bad instance block 0x%llx: %s\n", chid,
                 static_cast<unsigned long long>(inst), c.what);
    return std::unexpected(ChannelFault{ChannelError::bad_instance, 0, 0, inst, std::nullopt});
  }

  run.inst = inst;
  run.userd = userd;
  run.gp_base = (uint64_t{ramfc::GpBaseHiAddr::get(gp_hi)} << 32) | gp_lo;
  run.gp_entries = 1u << limit2;
  run.gp_get = rd(ramfc::GP_GET) % run.gp_entries;
  run.acquire = rd(ramfc::ACQUIRE);
  (void)d_.vram.write32(userd + userd::GP_GET, run.gp_get);

  AccessContext as;
  as.pdb = space.pdb;
  as.limit = space.limit;
  as.unit = FaultUnit::pfifo;
  as.inst = inst;
  as.chid = chid;
  const uint64_t epoch = run.epoch;
  run.ctx = std::make_unique<ChannelContext>(ChannelContext{
      chid, as, d_.mmu, d_.clock, d_.cost, [this, chid, epoch] { raise_nonstall(chid, epoch); },
      [this] { semaphore_written(); }});
  run.loaded = true;
  return {};
}

}  // namespace vgpu::gpu
