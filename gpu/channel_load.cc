// SPDX-License-Identifier: GPL-2.0-or-later
// Loading a channel on its first run: the instance block and RAMFC are
// validated (docs/spec/vgpu.md, "Channels"; the rules are the formats
// codec's, bounded here by VRAM) and the context built.
#include "common/text.h"
#include "gpu/pfifo.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

using namespace regs;

Pfifo::Ran Pfifo::load(uint32_t chid, uint32_t chan_inst, ChannelRun& run) {
  const Vram& vram = d_.vram;
  const fmt::ChanInst entry = fmt::decode_chan_inst(chan_inst);
  const uint64_t inst = entry.inst;
  // The block's own target must be VRAM; then VRAM bounds everything.
  const bool in_vram = entry.target == uint32_t(fmt::Target::vram);
  const auto inside = [&](uint64_t addr, uint64_t bytes) { return in_vram && vram.contains(addr, bytes); };
  const fmt::ChannelInstance c = inside(inst, inst::SIZE) ? fmt::decode_channel_instance(vram.reader(inst))
                                                          : fmt::ChannelInstance{};
  if (auto bad = fmt::check_channel_instance(inst, c, inside)) {
    d_.log.guest_error(
        strfmt("channel %u: bad instance block %s: %s", chid, hex(inst).c_str(), bad->message("VRAM").c_str()));
    return std::unexpected(ChannelFault{ChannelError::bad_instance, 0, 0, inst, std::nullopt});
  }

  run.inst = inst;
  run.userd = c.ramfc.userd;
  run.gp_base = c.ramfc.gp_base;
  run.gp_entries = c.ramfc.ring_entries();
  run.gp_get = c.ramfc.gp_get % run.gp_entries;
  run.acquire = c.ramfc.acquire;
  (void)d_.vram.write32(run.userd + userd::GP_GET, run.gp_get);

  AccessContext as;
  as.pdb = c.space.pdb;
  as.limit = c.space.limit;
  as.unit = FaultUnit::pfifo;
  as.inst = inst;
  as.chid = chid;
  // The channel and its epoch in one word: a callback of two words is
  // held in place by std::function, so the context's copies for each
  // engine job (two a launch, freed on the engine's thread) allocate
  // nothing for it.
  const uint64_t key = run.epoch * regs::NUM_CHANNELS + chid;
  run.ctx = std::make_unique<ChannelContext>(
      ChannelContext{chid, as, d_.mmu, d_.clock, d_.cost,
                     [this, key] {
                       raise_nonstall(static_cast<uint32_t>(key % regs::NUM_CHANNELS), key / regs::NUM_CHANNELS);
                     },
                     [this] { semaphore_written(); }});
  run.ctx->device = d_.device;
  run.ctx->modules = d_.modules;
  run.loaded = true;
  return {};
}

}  // namespace vgpu::gpu
