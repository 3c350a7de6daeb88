// SPDX-License-Identifier: GPL-2.0-or-later
// Bounded polling of device state: every loop calls Port::relax() so the
// platform (a model thread, a mediator) can make progress, and gives up
// after a host-time deadline. After SPIN_NS of spinning the loop sleeps
// between polls instead: a driver waiting for a long kernel must not hold
// a CPU the GPU's own work (or another VM) could use.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "driver/port.h"

namespace vgpu::driver {

// As a wait's timeout: the port's register_wait_ns() (2 s but where a
// harness shortens it).
inline constexpr uint64_t PORT_REGISTER_WAIT = 0;
inline constexpr uint64_t POLL_SPIN_NS = 50'000;   // spin (with relax) this long first
inline constexpr uint64_t POLL_SLEEP_NS = 10'000;  // then sleep this long between polls
inline constexpr unsigned long POLL_TIMER_SLACK_NS = 1'000;

// Sleeps of a few microseconds are only that short with a small timer
// slack (Linux's default is 50 us); set it once per polling thread.
inline void tighten_timer_slack() {
#if defined(__linux__)
  thread_local bool done = false;
  if (!done) {
    prctl(PR_SET_TIMERSLACK, POLL_TIMER_SLACK_NS, 0, 0, 0);
    done = true;
  }
#endif
}

// Calls done() until it returns true (-> true) or timeout_ns of host time
// passes (-> false).
template <typename Fn>
[[nodiscard]] bool poll_until(Port& port, Fn&& done, uint64_t timeout_ns = PORT_REGISTER_WAIT) {
  if (timeout_ns == PORT_REGISTER_WAIT) timeout_ns = port.register_wait_ns();
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(timeout_ns);
  const auto spin_until = start + std::chrono::nanoseconds(POLL_SPIN_NS);
  for (;;) {
    if (done()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return done();
    if (now < spin_until) {
      port.relax();
    } else {
      tighten_timer_slack();
      std::this_thread::sleep_for(std::chrono::nanoseconds(POLL_SLEEP_NS));
    }
  }
}

}  // namespace vgpu::driver
