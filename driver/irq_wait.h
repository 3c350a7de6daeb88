// SPDX-License-Identifier: GPL-2.0-or-later
// Waiting on interrupts instead of polling: check memory, sleep until the
// device's next message, check again. The message counts are read before
// each check, so a message sent between the check and the sleep ends the
// sleep at once (no lost wake-up). An optional spin (with relax) before
// the first sleep trades a CPU for latency on short work.
#pragma once

#include <chrono>
#include <cstdint>

#include "driver/port.h"

namespace vgpu::driver {

// Calls done() until it returns true (-> true) or timeout_ns of host time
// passes (-> false); between calls, spins for spin_ns, then sleeps until
// an interrupt message. The port must have interrupts.
template <typename Fn>
[[nodiscard]] bool wait_on_interrupts(Port& port, Fn&& done, uint64_t timeout_ns, uint64_t spin_ns) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(timeout_ns);
  const auto spin_until = start + std::chrono::nanoseconds(spin_ns);
  for (;;) {
    const IrqCounts seen = port.interrupt_counts();
    if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return done();
    if (now < spin_until) {
      port.relax();
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
    (void)port.wait_interrupt(seen, static_cast<uint64_t>(left));
  }
}

}  // namespace vgpu::driver
