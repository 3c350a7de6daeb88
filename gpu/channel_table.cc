// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/channel_table.h"

namespace vgpu::gpu {

using namespace regs::pfifo;

namespace {
constexpr uint32_t CHAN_INST_BITS = ChanInstAddr::mask | ChanInstTarget::mask | ChanInstPoll::mask |
                                    ChanInstValid::mask;
constexpr uint32_t CHAN_STATE_BITS = ChanStateRunnable::mask | ChanStateEngine::mask;

// CHAN_STATE shows no run in progress: no work fetched or executing, no
// acquire pending, no hold at a slice boundary.
void show_not_running(ChannelSlot& s) {
  s.busy = false;
  s.acquire_pending = false;
  s.held = false;
}
}  // namespace

void ChannelTable::bind(uint32_t chid, uint32_t chan_inst) {
  ChannelSlot& s = slots_[chid];
  s.inst = chan_inst & CHAN_INST_BITS;
  ++s.epoch;  // the PFIFO thread reloads the channel from its (new) instance block
  s.stopped = false;
  s.loaded = false;
  s.resume = false;
  show_not_running(s);
  s.engine_result.reset();
}

uint32_t ChannelTable::state(uint32_t chid) const {
  const ChannelSlot& s = slots_[chid];
  return s.state | ChanStateAcquirePending::make(s.acquire_pending) | ChanStateBusy::make(s.busy) |
         ChanStateEngineOutstanding::make(s.engine_outstanding) | ChanStateSliceHeld::make(s.held);
}

void ChannelTable::set_runlist(const std::vector<uint32_t>& chids) {
  listed_.clear();
  for (uint32_t c : chids)
    if (c < slots_.size()) listed_.set(c);
}

bool ChannelTable::ready(uint32_t chid) const {
  const ChannelSlot& s = slots_[chid];
  return ChanInstValid::get(s.inst) && ChanStateRunnable::get(s.state) && listed_.test(chid) && !s.stopped &&
         !(s.engine_outstanding && !s.engine_result);
}

bool ChannelTable::fail(uint32_t chid, uint64_t epoch, const ChannelFault& f) {
  ChannelSlot& s = slots_[chid];
  if (s.epoch != epoch) return false;
  s.stopped = true;
  s.state = ChanStateRunnable::set(s.state, 0);
  show_not_running(s);
  s.error = ChanErrorCode::make(static_cast<uint32_t>(f.code));
  s.error_method = ChanErrorMethodAddr::make(f.method >> 2) | ChanErrorMethodSubch::make(f.subch);
  s.error_addr_lo = lo32(f.addr);
  s.error_addr_hi = hi32(f.addr);
  chan_error_pending_.set(chid);
  return true;
}

bool ChannelTable::raise_nonstall(uint32_t chid, uint64_t epoch) {
  if (slots_[chid].epoch != epoch) return false;
  nonstall_pending_.set(chid);
  return true;
}

void ChannelTable::engine_started(uint32_t chid, uint64_t epoch) {
  slots_[chid].engine_outstanding = true;
  slots_[chid].engine_epoch = epoch;
}

void ChannelTable::engine_finished(uint32_t chid, uint64_t epoch, MethodDone result) {
  ChannelSlot& s = slots_[chid];
  s.engine_outstanding = false;
  if (s.epoch == epoch) s.engine_result = std::move(result);
}

void ChannelTable::reset() {
  for (ChannelSlot& s : slots_) {
    ChannelSlot fresh;
    fresh.epoch = s.epoch + 1;
    fresh.engine_outstanding = s.engine_outstanding;
    fresh.engine_epoch = s.engine_epoch;
    s = std::move(fresh);
  }
  listed_.clear();
  chan_error_pending_.clear();
  nonstall_pending_.clear();
}

std::vector<RegRow> ChannelTable::registers(std::function<void()> kick) {
  const auto record = [this](const char* name, RegArray32 arr, uint32_t ChannelSlot::*member) {
    return read_only(name, arr, [this, member](uint32_t i) { return slots_[i].*member; });
  };
  return {
      sensitive(
          "PFIFO.CHAN_INST", CHAN_INST, [this](uint32_t i) { return slots_[i].inst; },
          [this, kick](uint32_t i, uint32_t v) {
            bind(i, v);
            kick();
          }),
      sensitive(
          "PFIFO.CHAN_STATE", CHAN_STATE, [this](uint32_t i) { return state(i); },
          [this, kick](uint32_t i, uint32_t v) {
            slots_[i].state = v & CHAN_STATE_BITS;
            kick();
          }),
      rw1c("PFIFO.CHAN_ERROR_PENDING", CHAN_ERROR_PENDING, chan_error_pending_.words.data()),
      rw1c("PFIFO.NONSTALL_PENDING", NONSTALL_PENDING, nonstall_pending_.words.data()),
      sensitive(
          "PFIFO.CHAN_ERROR", CHAN_ERROR, [this](uint32_t i) { return slots_[i].error; },
          [this](uint32_t i, uint32_t v) { slots_[i].error = v & ChanErrorCode::mask; }),
      record("PFIFO.CHAN_ERROR_METHOD", CHAN_ERROR_METHOD, &ChannelSlot::error_method),
      record("PFIFO.CHAN_ERROR_ADDR_LO", CHAN_ERROR_ADDR_LO, &ChannelSlot::error_addr_lo),
      record("PFIFO.CHAN_ERROR_ADDR_HI", CHAN_ERROR_ADDR_HI, &ChannelSlot::error_addr_hi),
  };
}

}  // namespace vgpu::gpu
