// SPDX-License-Identifier: GPL-2.0-or-later
// PFIFO's channel table: a slot per channel with its table registers
// (CHAN_INST, CHAN_STATE, the error record), its scheduling status (epoch,
// runlist membership, stopped, engine work), and the per-channel pending
// bits (CHAN_ERROR_PENDING, NONSTALL_PENDING). Guarded by the model lock;
// the PFIFO thread's run state of each channel lives apart (ChannelRun).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/reg_table.h"
#include "gpu/channel.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

class ChannelTable {
 public:
  ChannelSlot& operator[](uint32_t chid) { return slots_[chid]; }
  const ChannelSlot& operator[](uint32_t chid) const { return slots_[chid]; }

  // CHAN_INST written: a new binding (its run state must be reloaded).
  void bind(uint32_t chid, uint32_t chan_inst);
  // CHAN_STATE as read: the writable bits and the status.
  uint32_t state(uint32_t chid) const;
  // The runlist committed: exactly these channels are listed.
  void set_runlist(const std::vector<uint32_t>& chids);
  // The listed channels: the only ones PFIFO may pick (ready() needs it).
  const regs::ChannelBits& listed() const { return listed_; }

  // Whether the PFIFO thread may run the channel now (the unit's own
  // enables aside): bound, runnable, listed, not stopped, not waiting for
  // its engine work.
  bool ready(uint32_t chid) const;

  // Results of a channel's binding `epoch` (ignored when it was rebound
  // since): false when they came too late.
  bool fail(uint32_t chid, uint64_t epoch, const ChannelFault& f);  // record, stop, pending bit
  bool raise_nonstall(uint32_t chid, uint64_t epoch);
  void engine_started(uint32_t chid, uint64_t epoch);
  void engine_finished(uint32_t chid, uint64_t epoch, MethodDone result);

  bool errors_pending() const { return chan_error_pending_.any(); }
  bool nonstall_pending() const { return nonstall_pending_.any(); }

  // PMC.ENABLE cleared PFIFO: every binding goes. Engine work in flight
  // cannot be recalled: its result is dropped when it arrives.
  void reset();

  // The channel table's registers; `kick` wakes the PFIFO thread.
  std::vector<RegRow> registers(std::function<void()> kick);

 private:
  std::array<ChannelSlot, regs::NUM_CHANNELS> slots_;
  regs::ChannelBits listed_;  // the channels in the last runlist submitted
  regs::ChannelBits chan_error_pending_;
  regs::ChannelBits nonstall_pending_;
};

}  // namespace vgpu::gpu
