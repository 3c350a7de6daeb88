// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/clock.h"

#include <chrono>
#include <thread>

namespace vgpu {
namespace {
uint64_t monotonic_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
// Below this a sleep would overshoot; spin instead.
constexpr uint64_t SPIN_BELOW_NS = 200'000;
}  // namespace

RealClock::RealClock() : origin_ns_(monotonic_ns()) {}

uint64_t RealClock::now_ns() const { return monotonic_ns() - origin_ns_; }

uint64_t RealClock::charge(uint64_t, uint64_t) { return now_ns(); }

void RealClock::sleep_ns(uint64_t ns) {
  const uint64_t end = now_ns() + ns;
  if (ns > SPIN_BELOW_NS) std::this_thread::sleep_for(std::chrono::nanoseconds(ns - SPIN_BELOW_NS));
  while (now_ns() < end) std::this_thread::yield();
}

uint64_t VirtualClock::charge(uint64_t start_ns, uint64_t ns) {
  const uint64_t end = start_ns + ns;
  advance_to(end);
  return end;
}

void VirtualClock::advance_to(uint64_t t) {
  uint64_t cur = now_.load(std::memory_order_acquire);
  while (cur < t && !now_.compare_exchange_weak(cur, t, std::memory_order_acq_rel)) {
  }
}

std::unique_ptr<Clock> make_clock(ClockKind kind) {
  if (kind == ClockKind::real) return std::make_unique<RealClock>();
  return std::make_unique<VirtualClock>();
}

}  // namespace vgpu
