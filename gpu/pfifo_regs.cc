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
constexpr uint32_t USERD_BASE_BITS = UserdBaseAddr::mask | UserdBaseEnable::mask;
constexpr uint32_t RUNLIST_BASE_BITS = RunlistAddr::mask | RunlistTarget::mask;
constexpr uint32_t CHAN_SLICE_BITS = ChanSliceBlocks::mask | ChanSliceOnDemand::mask | ChanSliceTimed::mask |
                                     ChanSliceHold::mask;
// Runlist updates are applied when RUNLIST_SUBMIT is written: never pending.
constexpr uint32_t RUNLIST_IDLE = 0;

}  // namespace

uint32_t Pfifo::intr() const {
  return intr_ | IntrMmuFault::make(d_.faults.pending()) | IntrChannelError::make(channels_.errors_pending()) |
         IntrNonStall::make(channels_.nonstall_pending());
}

void Pfifo::reset() {
  channels_.reset();
  intr_ = intr_en_ = ctrl_ = pbdma_enable_ = 0;
  userd_base_.store(0);
  runlist_base_ = runlist_intr_ = chan_table_error_ = nonstall_engine_ = preempt_ = 0;
  for (auto& slice : chan_slice_) slice.store(0);
  slice_yield_.store(0);
  for (auto& watchdog : chan_watchdog_) watchdog.store(CHAN_WATCHDOG_RESET_MS);
  d_.faults.reset();
  kick();
}

void Pfifo::kick() {
  kick_ = true;
  cv_.notify_all();
}

void Pfifo::submit_runlist(uint32_t value) {
  const uint64_t base = uint64_t{RunlistAddr::get(runlist_base_)} << RUNLIST_SHIFT;
  const uint32_t count = RunlistCount::get(value);
  std::vector<uint32_t> listed;
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
      if (chid)
        listed.push_back(*chid);
      else
        table_error(ChanTableError::invalid_chid);
    }
  }
  channels_.set_runlist(listed);
  runlist_intr_ |= RunlistIntrDone::mask;
  intr_ |= IntrRunlist::mask;
  kick();
}

std::vector<RegRow> Pfifo::registers() {
  std::vector<RegRow> rows{
      // Latched bits are write-1-to-clear; the others follow their sources.
      sensitive(
          "PFIFO.INTR", INTR, [this](uint32_t) { return intr(); },
          [this](uint32_t, uint32_t v) { intr_ &= ~(v & LATCHED_INTR); }),
      plain("PFIFO.INTR_EN", INTR_EN, intr_en_, INTR_BITS),
      plain("PFIFO.CTRL", CTRL, ctrl_, CtrlEnable::mask).then([this] { kick(); }),
      plain("PFIFO.PBDMA_ENABLE", PBDMA_ENABLE, pbdma_enable_, regs::ALL_PBDMA),
      // Atomic: the doorbell path reads it without the model lock.
      sensitive(
          "PFIFO.USERD_BASE", USERD_BASE, [this](uint32_t) { return userd_base_.load(); },
          [this](uint32_t, uint32_t v) { userd_base_.store(v & USERD_BASE_BITS); }),
      plain("PFIFO.RUNLIST_BASE", RUNLIST_BASE, runlist_base_, RUNLIST_BASE_BITS),
      write_only("PFIFO.RUNLIST_SUBMIT", RUNLIST_SUBMIT, [this](uint32_t, uint32_t v) { submit_runlist(v); }),
      constant("PFIFO.RUNLIST_STATUS", RUNLIST_STATUS, RUNLIST_IDLE),
      rw1c("PFIFO.RUNLIST_INTR", RUNLIST_INTR, runlist_intr_),
      read_only("PFIFO.CHAN_TABLE_ERROR", CHAN_TABLE_ERROR, [this](uint32_t) { return chan_table_error_; }),
      rw1c("PFIFO.NONSTALL_ENGINE", NONSTALL_ENGINE, nonstall_engine_),
      // Pending while the PFIFO thread is inside a slice of the channel named:
      // once it reads 0, a stopped channel touches its instance block no more.
      sensitive(
          "PFIFO.PREEMPT", PREEMPT,
          [this](uint32_t) { return preempt_ | PreemptPending::make(servicing_ && *servicing_ == preempt_); },
          [this](uint32_t, uint32_t v) { preempt_ = PreemptChid::get(v); }),
      sensitive(
          "PFIFO.ENGINE_TIMEOUT", ENGINE_TIMEOUT, [this](uint32_t) { return engine_timeout_ms_.load(); },
          [this](uint32_t, uint32_t v) { engine_timeout_ms_.store(v); }),
      // Atomic: the PFIFO thread reads it at each method without the lock.
      sensitive(
          "PFIFO.CHAN_SLICE", CHAN_SLICE, [this](uint32_t i) { return chan_slice_[i].load(); },
          [this](uint32_t i, uint32_t v) { chan_slice_[i].store(v & CHAN_SLICE_BITS); }),
      // Atomic: engine threads read it at unit boundaries of on-demand pieces.
      sensitive(
          "PFIFO.SLICE_YIELD", SLICE_YIELD, [this](uint32_t) { return slice_yield_.load(); },
          [this](uint32_t, uint32_t v) { slice_yield_.store(v & SliceYieldRequest::mask); }),
      sensitive(
          "PFIFO.CHAN_WATCHDOG", CHAN_WATCHDOG, [this](uint32_t i) { return chan_watchdog_[i].load(); },
          [this](uint32_t i, uint32_t v) { chan_watchdog_[i].store(v); }),
      read_only("PFIFO.TIME_LO", TIME_LO, [this](uint32_t) { return Ptimer::time_0(d_.clock.now_ns()); }),
      read_only("PFIFO.TIME_HI", TIME_HI, [this](uint32_t) { return Ptimer::time_1(d_.clock.now_ns()); }),
  };
  for (RegRow& r : channels_.registers([this] { kick(); })) rows.push_back(std::move(r));
  for (RegRow& r : rows) r.gate = Gate::pfifo;
  return rows;
}

}  // namespace vgpu::gpu
