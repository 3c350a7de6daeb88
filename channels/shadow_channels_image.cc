// SPDX-License-Identifier: GPL-2.0-or-later
// Bound guest channels in the migration image (docs/migration.md §2 and §6,
// M4). Saved from a frozen vGPU; restored through the guest's own bind path
// (write_inst: the instance block is read and checked again from the moved
// VRAM, a new shadow instance block and shadow space are made), then the
// words the GPU wrote (USERD, the shadow RAMFC's GP_GET) and the model's run
// state. Nothing derived is taken from the stream.
#include <string>

#include "common/text.h"
#include "channels/shadow_channels.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {
namespace {

Error refused(uint32_t c, const std::string& what) {
  return Error{Errc::invalid_argument, strfmt("vgpu: migration of channel %u: %s", c, what.c_str())};
}

// A record's own words, in wire order (the model's run state follows them):
// encode and decode go through this one list.
template <typename Record, typename Io>
void record_fields(Record& record, Io& io) {
  io.fields(record.inst_reg, record.state_reg, record.in_runlist, record.guest_put, record.physical_put, record.userd);
}

}  // namespace

void encode_channel_record(const ChannelRecord& record, Writer& w) {
  record_fields(record, w);
  gpu::encode_channel(record.run, w);
}

Result<ChannelRecord> decode_channel_record(Reader& r, gpu::ChannelImageLayout layout) {
  ChannelRecord record;
  record_fields(record, r);
  Result<gpu::ChannelImage> run = gpu::decode_channel(r, layout);
  if (!run) return std::unexpected(run.error());
  record.run = std::move(*run);
  return record;
}

Result<ChannelRecord> ShadowChannels::save(uint32_t c) {
  if (!bound(c)) return std::unexpected(refused(c, "it is not bound"));
  const Channel& ch = channels_[c];
  ChannelRecord record{ch.inst_reg, ch.state_reg, ch.in_runlist, ch.guest_put, ch.physical_put, {}, {}};
  const uint64_t userd = env_.physical.userd(pchid(c));
  for (size_t i = 0; i < record.userd.size(); ++i)
    record.userd[i] = env_.vram.read32(userd + ChannelRecord::USERD_WORDS[i]);
  Result<gpu::ChannelImage> run = env_.physical.save_run(pchid(c));
  if (!run) return std::unexpected(run.error());
  record.run = std::move(*run);
  return record;
}

Status ShadowChannels::restore(uint32_t c, const ChannelRecord& record) {
  if (c >= count() || bound(c)) return std::unexpected(refused(c, "it is out of range or already bound"));
  write_inst(c, record.inst_reg);  // the guest's bind path
  if (!bound(c)) return std::unexpected(refused(c, "its instance block is refused here (see the guest error)"));
  Channel& ch = channels_[c];
  const uint32_t entries = ch.guest.ring_entries();
  const uint32_t gp_get = record.userd.back();
  static_assert(ChannelRecord::USERD_WORDS.back() == regs::userd::GP_GET);
  if (record.guest_put >= entries || record.physical_put >= entries || gp_get >= entries) {
    unbind(c);
    return std::unexpected(refused(c, strfmt("GP_PUT %u, GPU put %u or GP_GET %u is past its ring of %u entries",
                                             record.guest_put, record.physical_put, gp_get, entries)));
  }
  if (Status run = env_.physical.restore_run(pchid(c), record.run); !run) {
    unbind(c);
    return run;
  }
  const uint64_t userd = env_.physical.userd(pchid(c));
  for (size_t i = 0; i < record.userd.size(); ++i)
    env_.vram.write32(userd + ChannelRecord::USERD_WORDS[i], record.userd[i]);
  env_.vram.write32(userd + regs::userd::GP_PUT, record.physical_put);
  env_.vram.write32(ch.shadow_inst + regs::ramfc::GP_GET, gp_get);
  env_.vram.write32(ch.shadow_inst + regs::ramfc::GP_PUT, record.physical_put);
  ch.guest_put = record.guest_put;
  ch.physical_put = record.physical_put;
  if (ch.in_runlist != record.in_runlist) {
    ch.in_runlist = record.in_runlist;
    commit_runlist();
  }
  // The guest's enable path, with the physical channel left stopped: the
  // caller makes it runnable (at once, or at a frozen destination's thaw),
  // so PFIFO never starts an entry handed out on the source before that.
  namespace pf = regs::pfifo;
  write_state(c, record.state_reg & ~pf::ChanStateRunnable::mask);
  ch.state_reg = record.state_reg & (pf::ChanStateRunnable::mask | pf::ChanStateEngine::mask);
  if (pf::ChanStateRunnable::get(ch.state_reg) && !env_.lazy_shadow)
    env_.spaces.sync(*ch.space, true);  // sync point: channel enable
  return {};
}

}  // namespace vgpu::mediator
