// SPDX-License-Identifier: GPL-2.0-or-later
// Waiting on interrupts instead of polling: check memory, sleep until the
// device's next message, check again. The message counts are read before
// each check, so a message sent between the check and the sleep ends the
// sleep at once (no lost wake-up). An optional spin (with relax) trades a
// CPU for latency: at the start of a short wait, or just before the
// expected end of a longer one (hybrid polling: FenceSlot::wait).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "driver/port.h"

namespace vgpu::driver {

// When a wait polls instead of sleeping, as offsets from its start: from
// `from_ns` (before it, sleep) until `until_ns` (after it, sleep again).
struct SpinWindow {
  uint64_t from_ns = 0;
  uint64_t until_ns = 0;
};

// Calls done() until it returns true (-> true) or timeout_ns of host time
// passes (-> false); between calls, spins inside the window, and
// otherwise sleeps until an interrupt message (before the window: at most
// until it opens). The port must have interrupts. If window_late_ns is
// given and the wait slept towards the window's opening, it receives how
// long after the opening the sleep ended (a host's timer slack and idle
// CPU wake-up: FenceSlot opens later windows that much earlier).
template <typename Fn>
[[nodiscard]] bool wait_on_interrupts(Port& port, Fn&& done, uint64_t timeout_ns, SpinWindow spin,
                                      uint64_t* window_late_ns = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(timeout_ns);
  const auto spin_from = start + std::chrono::nanoseconds(spin.from_ns);
  const auto spin_until = start + std::chrono::nanoseconds(spin.until_ns);
  for (;;) {
    const IrqCounts seen = port.interrupt_counts();
    if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return done();
    if (now >= spin_from && now < spin_until) {
      port.relax();
      continue;
    }
    const bool to_window = now < spin_from && spin_from < deadline;
    const auto wake = to_window ? spin_from : deadline;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now).count();
    (void)port.wait_interrupt(seen, static_cast<uint64_t>(left));
    // Woken before the opening: an interrupt, which says nothing of timers.
    if (const auto woke = std::chrono::steady_clock::now(); to_window && window_late_ns && woke >= spin_from)
      *window_late_ns = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(woke - spin_from).count());
  }
}

}  // namespace vgpu::driver
