// SPDX-License-Identifier: GPL-2.0-or-later
// Hybrid fence waits: where the polling window lies, how the lateness of
// wake-ups moves it, and that wait_on_interrupts reports that lateness.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "driver/fence.h"
#include "driver/irq_wait.h"

namespace vgpu::driver {
namespace {

constexpr uint64_t US = 1000;
constexpr uint64_t SPIN = 50 * US;

TEST(HybridWindow, AShortLastWaitSpinsFromTheStart) {
  const SpinWindow w = FenceSlot::hybrid_window(20 * US, SPIN, 30 * US);
  EXPECT_EQ(w.from_ns, 0u);
  EXPECT_EQ(w.until_ns, SPIN);
}

TEST(HybridWindow, ALongLastWaitNeverSpins) {
  const SpinWindow w = FenceSlot::hybrid_window(FenceSlot::HYBRID_MAX_NS + 1, SPIN, 0);
  EXPECT_EQ(w.from_ns, w.until_ns);
  const SpinWindow off = FenceSlot::hybrid_window(400 * US, 0, 0);  // spinning turned off
  EXPECT_EQ(off.from_ns, off.until_ns);
}

TEST(HybridWindow, OpensEarlierByTheWakeUpLateness) {
  const SpinWindow on_time = FenceSlot::hybrid_window(400 * US, SPIN, 0);
  EXPECT_EQ(on_time.from_ns, 350 * US);
  EXPECT_EQ(on_time.until_ns, 450 * US);
  const SpinWindow late = FenceSlot::hybrid_window(400 * US, SPIN, 25 * US);
  EXPECT_EQ(late.from_ns, 325 * US);
  EXPECT_EQ(late.until_ns, 450 * US);
  // Never before the wait's start, and the lateness counted is bounded.
  EXPECT_EQ(FenceSlot::hybrid_window(60 * US, SPIN, 25 * US).from_ns, 0u);
  const SpinWindow capped = FenceSlot::hybrid_window(1'000 * US, SPIN, 10 * FenceSlot::MAX_WAKE_LATE_NS);
  EXPECT_EQ(capped.from_ns, 1'000 * US - SPIN - FenceSlot::MAX_WAKE_LATE_NS);
}

TEST(HybridWindow, LatenessRisesAtOnceAndFallsByQuarters) {
  EXPECT_EQ(FenceSlot::next_wake_late(0, 24 * US), 24 * US);
  EXPECT_EQ(FenceSlot::next_wake_late(24 * US, 4 * US), 19 * US);
  EXPECT_EQ(FenceSlot::next_wake_late(24 * US, 24 * US), 24 * US);
  EXPECT_EQ(FenceSlot::next_wake_late(0, ~uint64_t{0}), FenceSlot::MAX_WAKE_LATE_NS);
}

// A port whose sleeps end `late` after they were due (a host with timer
// slack), and whose device signals when `done_at` has passed.
class LatePort final : public Port {
 public:
  explicit LatePort(std::chrono::nanoseconds late) : late_(late) {}
  uint32_t read32(Bar, uint64_t) override { return 0; }
  void write32(Bar, uint64_t, uint32_t) override {}
  std::span<std::byte> map(Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(Bar) const override { return 0; }
  bool has_interrupts() const override { return true; }
  bool wait_interrupt(const IrqCounts&, uint64_t timeout_ns) override {
    std::this_thread::sleep_for(std::chrono::nanoseconds(timeout_ns) + late_);
    return false;
  }
  std::string name() const override { return "late port"; }

 private:
  std::chrono::nanoseconds late_;
};

TEST(HybridWindow, AWaitReportsHowLateItsSleepTowardsTheWindowEnded) {
  LatePort port(std::chrono::milliseconds(3));
  const auto start = std::chrono::steady_clock::now();
  const auto done_at = start + std::chrono::milliseconds(8);
  uint64_t late = 0;
  const bool ok = wait_on_interrupts(
      port, [&] { return std::chrono::steady_clock::now() >= done_at; }, 1'000'000'000,
      SpinWindow{2'000'000, 20'000'000}, &late);
  EXPECT_TRUE(ok);
  EXPECT_GE(late, 3'000'000u);    // the sleep was due at 2 ms and ended after 5 ms
  EXPECT_LT(late, 500'000'000u);  // and it is a lateness, not the whole wait
}

TEST(HybridWindow, AWaitThatNeverSleptTowardsAWindowReportsNothing) {
  LatePort port(std::chrono::milliseconds(0));
  uint64_t late = 12345;
  std::atomic<int> calls{0};
  const bool ok = wait_on_interrupts(
      port, [&] { return ++calls >= 3; }, 1'000'000'000, SpinWindow{0, 1'000'000'000}, &late);
  EXPECT_TRUE(ok);
  EXPECT_EQ(late, 12345u);
}

}  // namespace
}  // namespace vgpu::driver
