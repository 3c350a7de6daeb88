// SPDX-License-Identifier: GPL-2.0-or-later
// Taking a mutex that another thread holds for a moment, without sleeping.
//
// A contended std::mutex puts its caller to sleep in the kernel, and the
// wake-up after the holder lets go costs microseconds (15-35 us for a
// sleeping thread on the GPU machine, docs/benchmarks.md "Fifth pass"):
// far more than the fraction of a microsecond PFIFO's hand-overs hold the
// model lock for (a doorbell, an engine's result, PFIFO's own loop). Those
// hand-overs try the lock for up to LOCK_SPIN first, then block as usual.
#pragma once

#include <chrono>
#include <thread>

namespace vgpu {

inline constexpr std::chrono::nanoseconds LOCK_SPIN{20'000};
// Tries with a CPU pause between them before the rest yield the core (on
// a machine with fewer cores than busy threads the holder may need it).
inline constexpr unsigned LOCK_PAUSES = 64;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Lock is a std::unique_lock (not yet owning its mutex).
template <typename Lock>
void lock_spinning(Lock& l) {
  if (l.try_lock()) return;
  const auto until = std::chrono::steady_clock::now() + LOCK_SPIN;
  for (unsigned i = 0;; ++i) {
    if (i < LOCK_PAUSES) {
      cpu_relax();
    } else {
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() >= until) break;
    }
    if (l.try_lock()) return;
  }
  l.lock();
}

}  // namespace vgpu
