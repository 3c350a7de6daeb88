// SPDX-License-Identifier: GPL-2.0-or-later
// Fences, as nouveau's nvc0_fence: one 16-byte slot per channel in a fence
// buffer; emitting releases the next sequence number with a 16-byte
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

  // Waits up to this long poll near their expected end (spin_window()).
  static constexpr uint64_t HYBRID_MAX_NS = 2'000'000;

 private:
  SpinWindow spin_window() const;

  Port& port_;
  Channel& ch_;
  uint64_t va_;
  uint64_t bar1_;
  uint64_t spin_ns_;
  uint32_t seq_ = 0;
  // How long the last wait took; none yet: sleep at once.
  uint64_t last_wait_ns_ = ~uint64_t{0};
};

}  // namespace vgpu::driver
