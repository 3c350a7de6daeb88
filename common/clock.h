// SPDX-License-Identifier: GPL-2.0-or-later
// Time for the GPU model and the scheduler. RealClock follows the host's
// monotonic clock; VirtualClock only moves when the model charges an
// operation's modeled cost (docs/spec/vgpu.md, "Time and the cost model"),
// which makes experiments deterministic and fast.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace vgpu {

enum class ClockKind { real, virtual_time };

class Clock {
 public:
  virtual ~Clock() = default;
  virtual ClockKind kind() const = 0;
  // Nanoseconds since the clock was created.
  virtual uint64_t now_ns() const = 0;
  // Account for an operation of `ns` nanoseconds that started at `start_ns`.
  // The real clock lets the time pass (the work took it); the virtual clock
  // moves to start_ns + ns if that is later than now. Returns the end time.
  virtual uint64_t charge(uint64_t start_ns, uint64_t ns) = 0;
  // Wait for `ns` nanoseconds of this clock's time (spin kernels, timeouts).
  virtual void sleep_ns(uint64_t ns) = 0;
};

class RealClock final : public Clock {
 public:
  RealClock();
  ClockKind kind() const override { return ClockKind::real; }
  uint64_t now_ns() const override;
  uint64_t charge(uint64_t start_ns, uint64_t ns) override;
  void sleep_ns(uint64_t ns) override;

 private:
  uint64_t origin_ns_;
};

class VirtualClock final : public Clock {
 public:
  ClockKind kind() const override { return ClockKind::virtual_time; }
  uint64_t now_ns() const override { return now_.load(std::memory_order_acquire); }
  uint64_t charge(uint64_t start_ns, uint64_t ns) override;
  void sleep_ns(uint64_t ns) override { charge(now_ns(), ns); }
  void advance_to(uint64_t t);

 private:
  std::atomic<uint64_t> now_{0};
};

std::unique_ptr<Clock> make_clock(ClockKind kind);

}  // namespace vgpu
