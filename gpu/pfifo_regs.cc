// SPDX-License-Identifier: GPL-2.0-or-later
// PFIFO registers: control, interrupts, USERD base, runlist, channel table,
// per-channel error and non-stall records.
#include "gpu/pfifo.h"
#include "gpu/ptimer.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

using namespace regs::pfifo;

namespace {
constexpr uint32_t LATCHED_INTR = IntrChanTableError::mask | IntrRunlist::mask;
constexpr uint32_t INTR_BITS = LATCHED_INTR | IntrMmuFault::mask | IntrChannelError::mask | IntrNonStall::mask;
constexpr uint32_t CHAN_INST_BITS = ChanInstAddr::mask | ChanInstTarget::mask | ChanInstPoll::mask | ChanInstValid::mask;
constexpr uint32_t CHAN_STATE_BITS = ChanStateRunnable::mask | ChanStateEngine::mask;
constexpr uint32_t USERD_BASE_BITS = UserdBaseAddr::mask | UserdBaseEnable::mask;
constexpr uint32_t RUNLIST_BASE_BITS = RunlistAddr::mask | RunlistTarget::mask;
// Runlist updates are applied when RUNLIST_SUBMIT is written: never pending.
constexpr uint32_t RUNLIST_IDLE = 0;

}  // namespace

uint32_t Pfifo::intr() const {
  return intr_ | IntrMmuFault::make(d_.faults.pending()) | IntrChannelError::make(chan_error_pending_.any()) |
         IntrNonStall::make(nonstall_pending_.any());
}

void Pfifo::reset() {
  for (ChannelSlot& s : slots_) {
    // Engine work in flight cannot be recalled: its result is dropped when it arrives.
    ChannelSlot fresh;
    fresh.epoch = s.epoch + 1;
    fresh.engine_outstanding = s.engine_outstanding;
    fresh.engine_epoch = s.engine_epoch;
    s = std::move(fresh);
  }
  intr_ = intr_en_ = ctrl_ = pbdma_enable_ = 0;
  userd_base_.store(0);
  runlist_base_ = runlist_intr_ = chan_table_error_ = nonstall_engine_ = preempt_ = 0;
  chan_error_pending_.clear();
  nonstall_pending_.clear();
  d_.faults.reset();
  kick_ = true;
  cv_.notify_all();
}

void Pfifo::bind(uint32_t chid, uint32_t value) {
  ChannelSlot& s = slots_[chid];
  s.inst = value & CHAN_INST_BITS;
  ++s.epoch;   // the PFIFO thread reloads the channel from its (new) instance block
  s.stopped = false;
  s.loaded = false;
  s.busy = false;
  s.acquire_pending = false;
  s.engine_result.reset();
  kick_ = true;
  cv_.notify_all();
}

void Pfifo::submit_runlist(uint32_t value) {
  const uint64_t base = uint64_t{RunlistAddr::get(runlist_base_)} << RUNLIST_SHIFT;
  const uint32_t count = RunlistCount::get(value);
  for (ChannelSlot& s : slots_) s.in_runlist = false;
  const auto table_error = [this](ChanTableError e) {
    chan_table_error_ = static_cast<uint32_t>(e);
    intr_ |= IntrChanTableError::mask;
  };
  if (RunlistTarget::get(runlist_base_) != uint32_t(fmt::Target::vram) ||
      !d_.vram.contains(base, uint64_t{count} * regs::runlist::ENTRY_BYTES)) {
    table_error(ChanTableError::invalid_target);
  } else {
    for (uint32_t i = 0; i < count; ++i) {
      const auto chid = fmt::decode_runlist_entry(
          d_.vram.read32(base + uint64_t{i} * regs::runlist::ENTRY_BYTES + regs::runlist::ENTRY_CHID));
      if (!chid) {
        table_error(ChanTableError::invalid_chid);
        continue;
      }
      slots_[*chid].in_runlist = true;
    }
  }
  runlist_intr_ |= RunlistIntrDone::mask;
  intr_ |= IntrRunlist::mask;
  kick_ = true;
  cv_.notify_all();
}

void Pfifo::add_registers(RegisterFile& rf) {
  const Gate g = Gate::pfifo;
  rf.add(RegRecord{"PFIFO.INTR", single(INTR), Access::rw1c, g, [this](uint32_t) { return intr(); },
                   [this](uint32_t, uint32_t v) { intr_ &= ~(v & LATCHED_INTR); }});
  rf.add(stored_rw("PFIFO.INTR_EN", INTR_EN, g, intr_en_, INTR_BITS));
  rf.add(RegRecord{"PFIFO.CTRL", single(CTRL), Access::rw, g, [this](uint32_t) { return ctrl_; },
                   [this](uint32_t, uint32_t v) {
                     ctrl_ = v & CtrlEnable::mask;
                     kick_ = true;
                     cv_.notify_all();
                   }});
  rf.add(stored_rw("PFIFO.PBDMA_ENABLE", PBDMA_ENABLE, g, pbdma_enable_, regs::ALL_PBDMA));
  rf.add(RegRecord{"PFIFO.USERD_BASE", single(USERD_BASE), Access::rw, g, [this](uint32_t) { return userd_base_.load(); },
                   [this](uint32_t, uint32_t v) { userd_base_.store(v & USERD_BASE_BITS); }});
  rf.add(stored_rw("PFIFO.RUNLIST_BASE", RUNLIST_BASE, g, runlist_base_, RUNLIST_BASE_BITS));
  rf.add(RegRecord{"PFIFO.RUNLIST_SUBMIT", single(RUNLIST_SUBMIT), Access::wo, g, nullptr,
                   [this](uint32_t, uint32_t v) { submit_runlist(v); }});
  rf.add(constant_ro("PFIFO.RUNLIST_STATUS", RUNLIST_STATUS, g, RUNLIST_IDLE));
  rf.add(stored_rw1c("PFIFO.RUNLIST_INTR", RUNLIST_INTR, g, runlist_intr_));
  rf.add(RegRecord{"PFIFO.CHAN_TABLE_ERROR", single(CHAN_TABLE_ERROR), Access::ro, g,
                   [this](uint32_t) { return chan_table_error_; }, nullptr});
  rf.add(stored_rw1c("PFIFO.NONSTALL_ENGINE", NONSTALL_ENGINE, g, nonstall_engine_));
  // Pending while the PFIFO thread is inside a slice of the channel named:
  // once it reads 0, a stopped channel touches its instance block no more.
  rf.add(RegRecord{"PFIFO.PREEMPT", single(PREEMPT), Access::rw, g,
                   [this](uint32_t) {
                     return preempt_ | PreemptPending::make(servicing_ && *servicing_ == preempt_);
                   },
                   [this](uint32_t, uint32_t v) { preempt_ = PreemptChid::get(v); }});
  rf.add(RegRecord{"PFIFO.TIME_LO", single(TIME_LO), Access::ro, g,
                   [this](uint32_t) { return Ptimer::time_0(d_.clock.now_ns()); }, nullptr});
  rf.add(RegRecord{"PFIFO.TIME_HI", single(TIME_HI), Access::ro, g,
                   [this](uint32_t) { return Ptimer::time_1(d_.clock.now_ns()); }, nullptr});

  rf.add(RegRecord{"PFIFO.CHAN_INST", CHAN_INST, Access::rw, g, [this](uint32_t i) { return slots_[i].inst; },
                   [this](uint32_t i, uint32_t v) { bind(i, v); }});
  rf.add(RegRecord{"PFIFO.CHAN_STATE", CHAN_STATE, Access::rw, g,
                   [this](uint32_t i) {
                     const ChannelSlot& s = slots_[i];
                     return s.state | ChanStateAcquirePending::make(s.acquire_pending) | ChanStateBusy::make(s.busy) |
                            ChanStateEngineOutstanding::make(s.engine_outstanding);
                   },
                   [this](uint32_t i, uint32_t v) {
                     slots_[i].state = v & CHAN_STATE_BITS;
                     kick_ = true;
                     cv_.notify_all();
                   }});
  const auto bitmap = [g](const char* name, RegArray32 arr, regs::ChannelBits& bits) {
    return RegRecord{name, arr, Access::rw1c, g, [&bits](uint32_t i) { return bits.words[i]; },
                     [&bits](uint32_t i, uint32_t v) { bits.words[i] &= ~v; }};
  };
  rf.add(bitmap("PFIFO.CHAN_ERROR_PENDING", CHAN_ERROR_PENDING, chan_error_pending_));
  rf.add(bitmap("PFIFO.NONSTALL_PENDING", NONSTALL_PENDING, nonstall_pending_));
  rf.add(RegRecord{"PFIFO.CHAN_ERROR", CHAN_ERROR, Access::rw, g, [this](uint32_t i) { return slots_[i].error; },
                   [this](uint32_t i, uint32_t v) { slots_[i].error = v & ChanErrorCode::mask; }});
  const auto record = [this, g](const char* name, RegArray32 arr, uint32_t ChannelSlot::*member) {
    return RegRecord{name, arr, Access::ro, g, [this, member](uint32_t i) { return slots_[i].*member; }, nullptr};
  };
  rf.add(record("PFIFO.CHAN_ERROR_METHOD", CHAN_ERROR_METHOD, &ChannelSlot::error_method));
  rf.add(record("PFIFO.CHAN_ERROR_ADDR_LO", CHAN_ERROR_ADDR_LO, &ChannelSlot::error_addr_lo));
  rf.add(record("PFIFO.CHAN_ERROR_ADDR_HI", CHAN_ERROR_ADDR_HI, &ChannelSlot::error_addr_hi));
}

}  // namespace vgpu::gpu
