// SPDX-License-Identifier: GPL-2.0-or-later
// Fences, as nouveau's nvc0_fence: one 16-byte slot per channel in a fence
// buffer; emitting releases the next sequence number with a one-word
// SEMAPHORE release (after engine idle) and raises a non-stall interrupt;
// waiting checks the slot through BAR1 and sleeps until the next interrupt
// message; the channel's CHAN_ERROR is read once per error message. On a
// port without interrupts, waiting polls (and reads CHAN_ERROR every ms).
#pragma once

#include <cstdint>

#include "common/error.h"
#include "driver/channel.h"
#include "driver/irq_wait.h"
#include "driver/pushbuf.h"

namespace vgpu::driver {

struct Fence {
  uint32_t chid = 0;
  uint32_t value = 0;
  // Entries the channel had submitted when the release was emitted: the
  // release is in a later one, so once it passed these were consumed.
  uint64_t submitted = 0;
};

class FenceSlot {
 public:
  // va: the slot in the channel's address space; bar1: the same slot in BAR1.
  // spin_ns: how long a wait polls before it sleeps on interrupts, when
  // the previous wait ended within spin_ns (DeviceOptions::wait_spin_ns).
  FenceSlot(Port& port, Channel& ch, uint64_t va, uint64_t bar1, uint64_t spin_ns = 0)
      : port_(port), ch_(ch), va_(va), bar1_(bar1), spin_ns_(spin_ns) {}

  // Appends the release of the next value to pb.
  Fence emit(PushBuffer& pb);
  // The value the GPU last released.
  uint32_t completed();
  bool signaled(Fence f) { return static_cast<int32_t>(completed() - f.value) >= 0; }
  // Waits until f is signaled (ok), the channel reports an error
  // (device_error naming channel and code) or timeout_ns passes (timeout).
  [[nodiscard]] Status wait(Fence f, uint64_t timeout_ns);
  uint32_t last_emitted() const { return seq_; }
  // The last emitted fence, whole (Context::synchronize waits on it).
  Fence last_fence() const { return Fence{ch_.chid(), seq_, last_submitted_}; }

  // Waits up to this long poll near their expected end (spin_window()).
  static constexpr uint64_t HYBRID_MAX_NS = 2'000'000;
  // The most a window opens early for late wake-ups (wake_late_ns_).
  static constexpr uint64_t MAX_WAKE_LATE_NS = 200'000;

  // When a wait polls: all along when the last one took at most spin_ns;
  // for one of up to HYBRID_MAX_NS, from spin_ns plus the usual lateness
  // of a wake-up before the time the last one took, for twice spin_ns
  // after that; longer ones never.
  static SpinWindow hybrid_window(uint64_t last_wait_ns, uint64_t spin_ns, uint64_t wake_late_ns);
  // The lateness estimate after a wait whose sleep towards the window
  // ended late_ns after it opened: it follows a rise at once (a window
  // opened too late costs a whole wake-up) and a fall by a quarter of
  // the difference per wait; at most MAX_WAKE_LATE_NS.
  static uint64_t next_wake_late(uint64_t estimate_ns, uint64_t late_ns);

 private:
  SpinWindow spin_window() const { return hybrid_window(last_wait_ns_, spin_ns_, wake_late_ns_); }

  Port& port_;
  Channel& ch_;
  uint64_t va_;
  uint64_t bar1_;
  uint64_t spin_ns_;
  uint32_t seq_ = 0;
  uint64_t last_submitted_ = 0;
  // How long the last wait took; none yet: sleep at once.
  uint64_t last_wait_ns_ = ~uint64_t{0};
  // How late sleeps towards a window's opening usually end.
  uint64_t wake_late_ns_ = 0;
};

}  // namespace vgpu::driver
