// SPDX-License-Identifier: GPL-2.0-or-later
// Shadow channels: guest channel ids map to physical ones from the vGPU's
// range; binding validates and shadows the guest's instance block; the
// runlist is virtualized; a GP_PUT doorbell becomes a scheduler
// submission, and dispatch() hands it to the physical GPU. The sync
// points of the Fermi model (TLB invalidate, channel bind/enable, runlist
// submit, GP_PUT) are where shadows are brought up to date: at each of
// them in naive mode, only at dispatch (dirty pages) in lazy mode.
#include <algorithm>

#include "common/text.h"
#include "mediator/host.h"
#include "mediator/vgpu.h"

namespace vgpu::mediator {
namespace {
namespace pf = regs::pfifo;
}  // namespace

void Vgpu::write_chan_inst(uint32_t gchid, uint32_t value) {
  if (gchid >= channels_.size()) {
    guest_error(strfmt("CHAN_INST of channel %u outside the VM's %zu channels", gchid, channels_.size()));
    chan_table_error_ = static_cast<uint32_t>(pf::ChanTableError::invalid_chid);
    pfifo_intr_ |= pf::IntrChanTableError::mask;
    update_interrupt_line();
    return;
  }
  channels_[gchid].inst_reg = value;
  const fmt::ChanInst entry = fmt::decode_chan_inst(value);
  if (!entry.valid) {
    unbind(gchid);
    return;
  }
  if (entry.target != uint32_t(fmt::Target::vram)) {
    guest_error(strfmt("channel %u: instance block target %u is not VRAM", gchid, entry.target));
    raise_channel_error(gchid, regs::ChannelError::bad_instance, 0, 0);
    return;
  }
  bind(gchid, entry.inst);
}

std::shared_ptr<shadow::ShadowSpace> Vgpu::space_for(uint64_t guest_pd, Status& status) {
  auto it = spaces_.find(guest_pd);
  if (it != spaces_.end())
    if (auto live = it->second.lock()) return live;
  auto created = shadow::ShadowSpace::create(guest_, *reserved_, counters_.shadow, guest_pd);
  if (!created) {
    status = std::unexpected(created.error());
    return nullptr;
  }
  std::shared_ptr<shadow::ShadowSpace> space = std::move(*created);
  spaces_[guest_pd] = space;
  return space;
}

void Vgpu::bind(uint32_t gchid, uint64_t guest_inst) {
  unbind(gchid);
  reap_retired();
  Channel& ch = channels_[gchid];
  auto desc = channels::read_guest_instance(guest_, guest_inst);
  if (!desc) {
    guest_error(strfmt("channel %u: %s", gchid, desc.error().message.c_str()));
    raise_channel_error(gchid, regs::ChannelError::bad_instance, 0, guest_inst);
    return;
  }
  Status status;
  auto space = space_for(desc->pd(), status);
  auto shadow_inst = space ? reserved_->alloc(regs::inst::SIZE, regs::inst::ALIGN) : std::nullopt;
  if (!space || !shadow_inst) {
    guest_error(strfmt("channel %u: no reserved VRAM for its shadows%s%s", gchid, status ? "" : ": ",
                       status ? "" : status.error().message.c_str()));
    raise_channel_error(gchid, regs::ChannelError::bad_instance, 0, guest_inst);
    return;
  }
  if (!config_.lazy_shadow) sync_space(*space, true);   // sync point: channel bind
  const uint32_t pchid = pchid_base_ + gchid;
  const uint64_t userd = host_.host_userd(pchid);
  for (uint32_t off = 0; off < regs::userd::SIZE; off += sizeof(uint32_t)) host_.gpu().vram().write32(userd + off, 0);
  channels::write_shadow_instance(host_.gpu().vram(), *shadow_inst, guest_, *desc, space->shadow_pd(), userd);
  host_.bind_physical(pchid, *shadow_inst);
  ch.bound = true;
  ch.guest = *desc;
  ch.shadow_inst = *shadow_inst;
  ch.space = std::move(space);
  ch.guest_put = 0;
  ch.physical_put = 0;
  rebuild_layout(false);
}

void Vgpu::unbind(uint32_t gchid) {
  if (gchid >= channels_.size()) return;
  Channel& ch = channels_[gchid];
  if (!ch.bound) return;
  const uint32_t pchid = pchid_base_ + gchid;
  host_.set_runnable(pchid, false);
  host_.unbind_physical(pchid);
  finish_in_flight(ch, ch.in_flight_start, host_.now_ns());
  if (pf::ChanStateEngineOutstanding::get(host_.physical_state(pchid)))
    retired_.push_back(Retired{pchid, ch.shadow_inst, std::move(ch.space)});
  else
    reserved_->free(ch.shadow_inst);
  ch.shadow_inst = 0;
  ch.space.reset();
  ch.bound = false;
  if (ch.in_runlist) {
    ch.in_runlist = false;
    host_.set_runlist(id_, runlist_pchids_locked());
  }
}

void Vgpu::reap_retired() {
  std::erase_if(retired_, [&](Retired& r) {
    if (pf::ChanStateEngineOutstanding::get(host_.physical_state(r.pchid))) return false;
    reserved_->free(r.shadow_inst);
    return true;   // the space goes with the entry, unless a new binding shares it
  });
}

void Vgpu::write_chan_state(uint32_t gchid, uint32_t value) {
  if (gchid >= channels_.size()) {
    guest_error(strfmt("CHAN_STATE of channel %u outside the VM's %zu channels", gchid, channels_.size()));
    chan_table_error_ = static_cast<uint32_t>(pf::ChanTableError::invalid_chid);
    pfifo_intr_ |= pf::IntrChanTableError::mask;
    update_interrupt_line();
    return;
  }
  Channel& ch = channels_[gchid];
  ch.state_reg = value & (pf::ChanStateRunnable::mask | pf::ChanStateEngine::mask);
  if (!ch.bound) return;
  const bool runnable = pf::ChanStateRunnable::get(value);
  if (runnable && !config_.lazy_shadow) sync_space(*ch.space, true);   // sync point: channel enable
  host_.set_runnable(pchid_base_ + gchid, runnable);
}

uint32_t Vgpu::read_chan_state(uint32_t gchid) {
  if (gchid >= channels_.size()) return 0;
  const Channel& ch = channels_[gchid];
  if (!ch.bound) return ch.state_reg;
  // Runnable as the guest set it; busy and acquire-pending as the GPU reports.
  const uint32_t phys = host_.physical_state(pchid_base_ + gchid);
  return ch.state_reg | (phys & (pf::ChanStateBusy::mask | pf::ChanStateAcquirePending::mask));
}

std::vector<uint32_t> Vgpu::runlist_pchids_locked() const {
  std::vector<uint32_t> out;
  for (uint32_t c = 0; c < channels_.size(); ++c)
    if (channels_[c].in_runlist && channels_[c].bound) out.push_back(pchid_base_ + c);
  return out;
}

std::vector<uint32_t> Vgpu::runlist_pchids() const {
  MediatorLock lock(mutex_);
  return runlist_pchids_locked();
}

void Vgpu::submit_runlist(uint32_t count) {
  if (!config_.lazy_shadow) sync_channel_spaces_full();   // sync point: runlist submit
  const uint64_t base = uint64_t{pf::RunlistAddr::get(runlist_base_)} << pf::RUNLIST_SHIFT;
  std::vector<bool> listed(channels_.size(), false);
  auto table_error = [&](pf::ChanTableError code, const std::string& what) {
    guest_error(what);
    chan_table_error_ = static_cast<uint32_t>(code);
    pfifo_intr_ |= pf::IntrChanTableError::mask;
    Counters::bump(counters_.faults);
  };
  if (pf::RunlistTarget::get(runlist_base_) != uint32_t(fmt::Target::vram) ||
      !guest_.partition().contains(base, uint64_t{count} * regs::runlist::ENTRY_BYTES)) {
    table_error(pf::ChanTableError::invalid_target,
                strfmt("runlist of %u entries at %s lies outside the VM's VRAM", count, hex(base).c_str()));
    count = 0;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t entry = guest_.read32(base + uint64_t{i} * regs::runlist::ENTRY_BYTES).value_or(~0u);
    const auto named = fmt::decode_runlist_entry(entry);
    const uint32_t chid = named.value_or(~0u);
    if (!named || chid >= channels_.size()) {
      table_error(pf::ChanTableError::invalid_chid,
                  strfmt("runlist entry %u names channel %u outside the VM's %zu channels", i, entry, channels_.size()));
      continue;
    }
    listed[chid] = true;
  }
  for (uint32_t c = 0; c < channels_.size(); ++c) channels_[c].in_runlist = listed[c];
  host_.set_runlist(id_, runlist_pchids_locked());
  runlist_intr_ |= pf::RunlistIntrDone::mask;
  pfifo_intr_ |= pf::IntrRunlist::mask;
  update_interrupt_line();
}

void Vgpu::doorbell(uint32_t gchid, uint32_t put) {
  Counters::bump(counters_.doorbells);
  Channel& ch = channels_[gchid];
  ch.guest_put = put;
  if (!ch.bound) return;
  if (!config_.lazy_shadow) sync_space(*ch.space, true);   // sync point: GP_PUT
  // Nothing new since the last dispatch, or a submission already queued
  // (it will run up to this put): no scheduler work.
  if (ch.guest_put == ch.physical_put || submission_queued_[gchid]) return;
  submission_queued_[gchid] = true;
  pending_submits_.push_back(gchid);
}

void Vgpu::dispatch(uint32_t gchid) {
  locked([&] {
    Counters::bump(counters_.submissions);
    const uint64_t now = host_.now_ns();
    if (gchid < submission_queued_.size()) submission_queued_[gchid] = false;
    if (gchid >= channels_.size()) {
      pending_completion_ = std::make_pair(now, now);
    } else {
      Channel& ch = channels_[gchid];
      const bool errored = chan_error_pending_[gchid / 32] & (1u << (gchid % 32));
      const bool runnable = pf::ChanStateRunnable::get(ch.state_reg);
      if (!ch.bound || !ch.in_runlist || !runnable || errored || ch.guest_put == ch.physical_put) {
        pending_completion_ = std::make_pair(now, now);   // nothing the GPU can run
      } else if (ch.guest_put >= ch.guest.ring_entries()) {
        guest_error(strfmt("channel %u: GP_PUT %u beyond its %u-entry ring", gchid, ch.guest_put, ch.guest.ring_entries()));
        raise_channel_error(gchid, regs::ChannelError::gpentry_invalid, 0, ch.guest_put);
        pending_completion_ = std::make_pair(now, now);
      } else {
        if (config_.lazy_shadow) sync_space(*ch.space, false);   // lazy: just before the channel runs
        ch.in_flight = true;
        ch.in_flight_start = now;
        ch.physical_put = ch.guest_put;
        host_.ring_physical(pchid_base_ + gchid, ch.guest_put);
      }
    }
  });
}

void Vgpu::sync_space(shadow::ShadowSpace& space, bool full) {
  const uint64_t before = counters_.shadow.shadow_writes.load(std::memory_order_relaxed);
  Status s = full ? space.sync_full() : space.sync_dirty();
  if (!s) guest_error("shadow sync: " + s.error().message);
  if (counters_.shadow.shadow_writes.load(std::memory_order_relaxed) != before)
    host_.invalidate_physical(space.shadow_pd());
}

void Vgpu::sync_channel_spaces_full() {
  for (auto& [pd, weak] : spaces_)
    if (auto space = weak.lock()) sync_space(*space, true);
}

void Vgpu::invalidate_tlb(uint32_t pdb_reg, uint32_t trigger) {
  namespace mmu = regs::mmu;
  if (!mmu::InvalidateTrigger::get(trigger)) return;
  Counters::bump(counters_.tlb_invalidates);
  const bool all = mmu::InvalidateAllPdb::get(trigger);
  const uint64_t pd = uint64_t{mmu::InvalidatePdbAddr::get(pdb_reg)} << fmt::TABLE_ALIGN_SHIFT;
  if (!config_.lazy_shadow) {
    for (auto& [gpd, weak] : spaces_)
      if (all || gpd == pd)
        if (auto space = weak.lock()) sync_space(*space, true);
  }
  bool bar_changed = false;
  for (gpu::Bar bar : {gpu::Bar::bar1, gpu::Bar::bar3}) {
    BarState& st = bar_state(bar);
    if (st.space && (all || st.space->guest_pd() == pd)) {
      sync_bar(bar, !config_.lazy_shadow);
      bar_changed = true;
    }
  }
  rebuild_layout(bar_changed);
}

}  // namespace vgpu::mediator
