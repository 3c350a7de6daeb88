// SPDX-License-Identifier: GPL-2.0-or-later
// Bounded polling of device state: every loop calls Port::relax() so the
// platform (a model thread, a mediator) can make progress, and gives up
// after a host-time deadline.
#pragma once

#include <chrono>
#include <cstdint>

#include "driver/port.h"

namespace vgpu::driver {

inline constexpr uint64_t DEFAULT_POLL_TIMEOUT_NS = 2'000'000'000;  // nouveau's 2 s register waits

// Calls done() until it returns true (-> true) or timeout_ns of host time
// passes (-> false).
template <typename Fn>
[[nodiscard]] bool poll_until(Port& port, Fn&& done, uint64_t timeout_ns = DEFAULT_POLL_TIMEOUT_NS) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return done();
    port.relax();
  }
}

}  // namespace vgpu::driver
