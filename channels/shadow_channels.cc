// SPDX-License-Identifier: GPL-2.0-or-later
#include "channels/shadow_channels.h"

#include "common/text.h"
#include "mediator/reg_names.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::mediator {
ShadowChannels::ShadowChannels(Env env, uint32_t count, uint32_t pchid_base)
    : env_(std::move(env)), pchid_base_(pchid_base), channels_(count), queued_(count, false) {}

ShadowChannels::~ShadowChannels() {
  for (uint32_t c = 0; c < count(); ++c) unbind(c);
}

bool ShadowChannels::check_index(uint32_t c, const char* reg) {
  if (c < count()) return true;
  env_.guest_error(strfmt("%s of channel %u outside the VM's %u channels", reg, c, count()));
  env_.regs.table_error(pf::ChanTableError::invalid_chid);
  return false;
}

void ShadowChannels::write_inst(uint32_t c, uint32_t value) {
  if (!check_index(c, "CHAN_INST")) return;
  channels_[c].inst_reg = value;
  const fmt::ChanInst entry = fmt::decode_chan_inst(value);
  if (!entry.valid) {
    unbind(c);
    return;
  }
  if (entry.target != uint32_t(fmt::Target::vram)) {
    env_.guest_error(strfmt("channel %u: instance block target %u is not VRAM", c, entry.target));
    env_.regs.raise_channel_error(c, regs::ChannelError::bad_instance, 0, 0);
    Counters::bump(env_.counters.faults);
    return;
  }
  bind(c, entry.inst);
}

void ShadowChannels::bind(uint32_t c, uint64_t guest_inst) {
  unbind(c);
  reap_retired();
  Channel& ch = channels_[c];
  const auto refuse = [&](const std::string& why) {
    env_.guest_error(strfmt("channel %u: %s", c, why.c_str()));
    env_.regs.raise_channel_error(c, regs::ChannelError::bad_instance, 0, guest_inst);
    Counters::bump(env_.counters.faults);
  };
  auto desc = channels::read_guest_instance(env_.guest, guest_inst);
  if (!desc) return refuse(desc.error().message);
  auto space = env_.spaces.get(desc->pd());
  auto shadow_inst = space ? env_.pool.alloc(regs::inst::SIZE, regs::inst::ALIGN) : std::nullopt;
  if (!space || !shadow_inst)
    return refuse(std::string("no reserved VRAM for its shadows") + (space ? "" : ": " + space.error().message));
  if (!env_.lazy_shadow) env_.spaces.sync(**space, true);  // sync point: channel bind
  const uint64_t userd = env_.physical.userd(pchid(c));
  for (uint32_t off = 0; off < regs::userd::SIZE; off += sizeof(uint32_t)) env_.vram.write32(userd + off, 0);
  channels::write_shadow_instance(env_.vram, *shadow_inst, env_.guest, *desc, (*space)->shadow_pd(), userd);
  env_.physical.bind(pchid(c), *shadow_inst);
  ch.bound = true;
  ch.guest = *desc;
  ch.shadow_inst = *shadow_inst;
  ch.space = std::move(*space);
  ch.guest_put = 0;
  ch.physical_put = 0;
  ch.ran = false;
  layout_changed_ = true;
}

void ShadowChannels::unbind(uint32_t c) {
  if (c >= count()) return;
  Channel& ch = channels_[c];
  if (!ch.bound) return;
  env_.physical.set_runnable(pchid(c), false);
  env_.physical.unbind(pchid(c));
  if (ch.ran) stopped_.emplace_back(c, ch.last_seq);  // its turn, if it is on the GPU, is over
  if (pf::ChanStateEngineOutstanding::get(env_.physical.state(pchid(c))))
    retired_.push_back(Retired{pchid(c), ch.shadow_inst, std::move(ch.space)});
  else
    env_.pool.free(ch.shadow_inst);
  ch.shadow_inst = 0;
  ch.space.reset();
  ch.bound = false;
  ch.ran = false;
  if (ch.in_runlist) {
    ch.in_runlist = false;
    commit_runlist();
  }
}

void ShadowChannels::reap_retired() {
  std::erase_if(retired_, [&](Retired& r) {
    if (pf::ChanStateEngineOutstanding::get(env_.physical.state(r.pchid))) return false;
    env_.pool.free(r.shadow_inst);
    return true;  // the space goes with the entry, unless a new binding shares it
  });
}

void ShadowChannels::write_state(uint32_t c, uint32_t value) {
  if (!check_index(c, "CHAN_STATE")) return;
  Channel& ch = channels_[c];
  const bool was_runnable = pf::ChanStateRunnable::get(ch.state_reg);
  ch.state_reg = value & (pf::ChanStateRunnable::mask | pf::ChanStateEngine::mask);
  if (!ch.bound) return;
  const bool runnable = pf::ChanStateRunnable::get(value);
  if (runnable && !env_.lazy_shadow) env_.spaces.sync(*ch.space, true);  // sync point: channel enable
  // Made unrunnable, the channel runs no more: its turn, if it is on the
  // GPU, is over (the GPU sends no idle event for a channel it stops
  // picking), as when it leaves the runlist.
  if (was_runnable && !runnable && ch.ran) stopped_.emplace_back(c, ch.last_seq);
  env_.physical.set_runnable(pchid(c), runnable);
}

uint32_t ShadowChannels::read_state(uint32_t c) {
  if (c >= count()) return 0;
  const Channel& ch = channels_[c];
  if (!ch.bound) return ch.state_reg;
  // Runnable as the guest set it; busy and acquire-pending as the GPU reports.
  const uint32_t phys = env_.physical.state(pchid(c));
  return ch.state_reg | (phys & (pf::ChanStateBusy::mask | pf::ChanStateAcquirePending::mask));
}

std::vector<uint32_t> ShadowChannels::runlist_pchids() const {
  std::vector<uint32_t> out;
  for (uint32_t c = 0; c < count(); ++c)
    if (channels_[c].in_runlist && channels_[c].bound) out.push_back(pchid(c));
  return out;
}

void ShadowChannels::submit_runlist(uint32_t entries) {
  if (!env_.lazy_shadow) env_.spaces.sync_all_full();  // sync point: runlist submit
  const uint32_t base_reg = env_.regs.runlist_base;
  const uint64_t base = uint64_t{pf::RunlistAddr::get(base_reg)} << pf::RUNLIST_SHIFT;
  std::vector<bool> listed(count(), false);
  const auto table_error = [&](pf::ChanTableError code, const std::string& what) {
    env_.guest_error(what);
    env_.regs.table_error(code);
    Counters::bump(env_.counters.faults);
  };
  if (pf::RunlistTarget::get(base_reg) != uint32_t(fmt::Target::vram) ||
      !env_.guest.partition().contains(base, uint64_t{entries} * regs::runlist::ENTRY_BYTES)) {
    table_error(pf::ChanTableError::invalid_target,
                strfmt("runlist of %u entries at %s lies outside the VM's VRAM", entries, hex(base).c_str()));
    entries = 0;
  }
  for (uint32_t i = 0; i < entries; ++i) {
    const uint32_t entry = env_.guest.read32(base + uint64_t{i} * regs::runlist::ENTRY_BYTES).value_or(~0u);
    const auto named = fmt::decode_runlist_entry(entry);
    if (!named || *named >= count()) {
      table_error(pf::ChanTableError::invalid_chid,
                  strfmt("runlist entry %u names channel %u outside the VM's %u channels", i, entry, count()));
      continue;
    }
    listed[*named] = true;
  }
  for (uint32_t c = 0; c < count(); ++c) {
    Channel& ch = channels_[c];
    // Off the GPU's runlist, the channel runs no more: its turn, if it is
    // on the GPU, is over (the GPU sends no idle event for it).
    if (ch.in_runlist && !listed[c] && ch.ran) stopped_.emplace_back(c, ch.last_seq);
    ch.in_runlist = listed[c];
  }
  commit_runlist();
  env_.regs.runlist_done();
}

void ShadowChannels::doorbell(uint32_t c, uint32_t put) {
  Counters::bump(env_.counters.doorbells);
  Channel& ch = channels_[c];
  ch.guest_put = put;
  if (!ch.bound) return;
  if (!env_.lazy_shadow) env_.spaces.sync(*ch.space, true);  // sync point: GP_PUT
  // Nothing new since the last dispatch, a submission already queued (it
  // will run up to this put) or the channel's turn in progress (its end
  // requeues what is left): no scheduler work.
  if (ch.in_turn && ch.guest_put != ch.physical_put) rung_in_turn_.push_back(c);
  if (ch.guest_put == ch.physical_put || queued_[c] || ch.in_turn) return;
  queued_[c] = true;
  submits_.push_back(c);
}

ShadowChannels::Dispatch ShadowChannels::dispatch(uint32_t c, uint64_t seq, uint64_t host_budget_ns) {
  Counters::bump(env_.counters.submissions);
  if (c >= count()) return Dispatch::nothing;
  queued_[c] = false;
  Channel& ch = channels_[c];
  const std::optional<uint64_t> until = deadline(host_budget_ns);
  sync_left_ = false;
  ch.in_turn = held(c) ? resume(c, until) : !piece_pending(c) && ring_next_piece(c, until);
  if (ch.in_turn) {
    ch.last_seq = seq;
    return Dispatch::ran;
  }
  return std::exchange(sync_left_, false) ? Dispatch::host_work_left : Dispatch::nothing;
}

ShadowChannels::Dispatch ShadowChannels::continue_turn(uint32_t c, uint64_t host_budget_ns) {
  if (c >= count() || !channels_[c].in_turn) return Dispatch::nothing;
  const std::optional<uint64_t> until = deadline(host_budget_ns);
  sync_left_ = false;
  if (held(c) ? resume(c, until) : ring_next_piece(c, until)) return Dispatch::ran;
  return std::exchange(sync_left_, false) ? Dispatch::host_work_left : Dispatch::nothing;
}

std::optional<uint64_t> ShadowChannels::deadline(uint64_t host_budget_ns) {
  if (host_budget_ns == 0) return std::nullopt;
  return shadow::ShadowSpace::steady_now_ns() + host_budget_ns;
}

// Lazy mode: the guest's latest tables, just before the channel runs.
bool ShadowChannels::sync_to_run(Channel& ch, std::optional<uint64_t> until_ns) {
  if (!env_.lazy_shadow) return true;
  if (!until_ns) {
    env_.spaces.sync(*ch.space, false);
    return true;
  }
  if (env_.spaces.sync_until(*ch.space, *until_ns)) return true;
  sync_left_ = true;  // the rest at the channel's next piece
  return false;
}

void ShadowChannels::end_turn(uint32_t c) {
  if (c >= count()) return;
  Channel& ch = channels_[c];
  ch.in_turn = false;
  if (!ch.bound || queued_[c]) return;
  // A launch held between slices is work left, whatever GP_PUT says.
  if (!held(c) && (ch.guest_put == ch.physical_put || piece_pending(c))) return;
  queued_[c] = true;
  submits_.push_back(c);
}

void ShadowChannels::piece_done(uint32_t c) {
  if (c >= count() || channels_[c].in_turn) return;
  end_turn(c);
}

bool ShadowChannels::ring_ahead(uint32_t c, uint64_t host_budget_ns) {
  if (c >= count() || !env_.entry_pieces) return false;
  const Channel& ch = channels_[c];
  if (!ch.in_turn || !ch.bound) return false;
  // A channel held at a slice boundary waits for the host's decision: a
  // GP_PUT written now would resume it (docs/scheduler.md, "Slicing by time").
  if (held(c)) return false;
  const uint32_t entries = ch.guest.ring_entries();
  const uint32_t gp_get = physical_gp_get(c);
  if (gp_get >= entries || ch.physical_put >= entries) return false;
  // One entry on the GPU, or none when its end is not handled yet (the
  // host's piece_ran then finds this one pending); two: one is already ahead.
  if ((ch.physical_put + entries - gp_get) % entries > 1) return false;
  if (pf::ChanStateAcquirePending::get(env_.physical.state(pchid(c)))) return false;
  sync_left_ = false;
  const bool rung = ring_next_piece(c, deadline(host_budget_ns));
  sync_left_ = false;  // the sync goes on at the turn's next piece
  if (!rung) return false;
  Counters::bump(env_.counters.rung_ahead);
  return true;
}

bool ShadowChannels::piece_pending(uint32_t c) const {
  if (c >= count()) return false;
  const Channel& ch = channels_[c];
  return ch.bound && physical_gp_get(c) != ch.physical_put;
}

uint32_t ShadowChannels::physical_gp_get(uint32_t c) const {
  return env_.vram.read32(env_.physical.userd(pchid(c)) + regs::userd::GP_GET);
}

bool ShadowChannels::in_turn_of(uint32_t c, uint64_t seq) const {
  return c < count() && channels_[c].in_turn && channels_[c].last_seq == seq;
}

bool ShadowChannels::guest_runnable(uint32_t c) const {
  return c < count() && channels_[c].bound && pf::ChanStateRunnable::get(channels_[c].state_reg);
}

bool ShadowChannels::held(uint32_t c) {
  return env_.sliced && channels_[c].bound && pf::ChanStateSliceHeld::get(env_.physical.state(pchid(c)));
}

bool ShadowChannels::resume(uint32_t c, std::optional<uint64_t> until_ns) {
  Channel& ch = channels_[c];
  const bool runnable = pf::ChanStateRunnable::get(ch.state_reg);
  if (!ch.bound || !ch.in_runlist || !runnable || env_.regs.channel_errored(c)) return false;
  if (!sync_to_run(ch, until_ns)) return false;   // as before any piece
  env_.physical.ring(pchid(c), ch.physical_put);  // GP_PUT written again: the next slice
  Counters::bump(env_.counters.slice_resumes);
  return true;
}

bool ShadowChannels::ring_next_piece(uint32_t c, std::optional<uint64_t> until_ns) {
  Channel& ch = channels_[c];
  const bool runnable = pf::ChanStateRunnable::get(ch.state_reg);
  if (!ch.bound || !ch.in_runlist || !runnable || env_.regs.channel_errored(c) || ch.guest_put == ch.physical_put)
    return false;  // nothing the GPU can run
  const uint32_t entries = ch.guest.ring_entries();
  if (ch.guest_put >= entries) {
    env_.guest_error(strfmt("channel %u: GP_PUT %u beyond its %u-entry ring", c, ch.guest_put, entries));
    env_.regs.raise_channel_error(c, regs::ChannelError::gpentry_invalid, 0, ch.guest_put);
    Counters::bump(env_.counters.faults);
    return false;
  }
  if (!sync_to_run(ch, until_ns)) return false;
  ch.physical_put = env_.entry_pieces && ch.physical_put < entries ? (ch.physical_put + 1) % entries : ch.guest_put;
  ch.ran = true;
  env_.physical.ring(pchid(c), ch.physical_put);
  return true;
}

void ShadowChannels::reset() {
  for (uint32_t c = 0; c < count(); ++c) {
    unbind(c);
    channels_[c] = Channel{};
  }
  commit_runlist();
  for (uint32_t c : submits_) queued_[c] = false;  // dropped before reaching the scheduler
  submits_.clear();
  rung_in_turn_.clear();
}

}  // namespace vgpu::mediator
