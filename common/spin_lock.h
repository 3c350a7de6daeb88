// SPDX-License-Identifier: GPL-2.0-or-later
// Taking a mutex that another thread holds for a moment, without sleeping.
//
// A contended std::mutex puts its caller to sleep in the kernel, and the
// wake-up after the holder lets go costs microseconds (15-35 us for a
// sleeping thread measured on the H100 GPU machine):
// far more than the fraction of a microsecond PFIFO's hand-overs hold the
// model lock for (a doorbell, an engine's result, PFIFO's own loop). Those
// hand-overs try the lock for up to LOCK_SPIN first, then block as usual.
#pragma once

#include <sched.h>

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

// Between two looks of a poll for another thread's hand-over that began
// at `start`: a CPU pause for its first PAUSE_WINDOW where the process has
// cores to spare (a yield costs 0.3 us on the GPU machine's host, more
// than a hand-over between two spinning cores: docs/cuda.md,
// "Hand-overs"), else a yield (with fewer cores than busy threads, the
// thread polled for may need this one). A launch's hand-overs have up to
// SPARE_CORES pollers at once (the guest's thread, the mediator's, PFIFO,
// two engines and a spare); the cores counted are those the process may
// run on (its affinity, e.g. under taskset), not the machine's.
inline constexpr unsigned SPARE_CORES = 6;
inline constexpr std::chrono::nanoseconds PAUSE_WINDOW{20'000};
inline bool cores_to_spare() {
  static const bool spare = [] {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    return static_cast<unsigned>(CPU_COUNT(&allowed)) >= SPARE_CORES;
  }();
  return spare;
}
inline void relax_poll(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point now) {
  if (cores_to_spare() && now - start < PAUSE_WINDOW)
    cpu_relax();
  else
    std::this_thread::yield();
}

// Polls done() from `start` until it is true or `until` has passed, with
// relax_poll between looks.
template <typename Done>
void spin_until(Done done, std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point until) {
  for (auto now = start; !done() && now < until; now = std::chrono::steady_clock::now()) relax_poll(start, now);
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
