// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/launch_trace.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <thread>

namespace vgpu {
namespace {

constexpr size_t at(LaunchPhase p) { return static_cast<size_t>(p); }

class LaunchTraceTest : public ::testing::Test {
 protected:
  void SetUp() override { LaunchTrace::reset(); }
  void TearDown() override {
    LaunchTrace::enable(false);
    LaunchTrace::reset();
  }
  static void sleep_us(int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }
  // Each phase marked in turn, with `gap_us` slept after it.
  struct Step {
    LaunchPhase phase;
    int gap_us = 0;
  };
  static void mark_in_turn(std::initializer_list<Step> steps) {
    for (const Step& step : steps) {
      LaunchTrace::mark(step.phase);
      if (step.gap_us) sleep_us(step.gap_us);
    }
  }
};

TEST_F(LaunchTraceTest, KeepsNothingWhileDisabled) {
  mark_in_turn({{LaunchPhase::doorbell}, {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  EXPECT_EQ(LaunchTrace::launches(), 0u);
  EXPECT_EQ(LaunchTrace::figures()[at(LaunchPhase::job_started)].samples, 0u);
}

TEST_F(LaunchTraceTest, KeepsALaunchsPhasesAsOffsetsFromItsDoorbell) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::api_entry, 200},
                {LaunchPhase::doorbell, 200},
                {LaunchPhase::job_started, 200},
                {LaunchPhase::release}});
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  const auto f = LaunchTrace::figures();
  EXPECT_EQ(f[at(LaunchPhase::doorbell)].p50_us, 0.0);
  EXPECT_LE(f[at(LaunchPhase::api_entry)].p50_us, -200.0);
  EXPECT_GE(f[at(LaunchPhase::job_started)].p50_us, 200.0);
  EXPECT_GE(f[at(LaunchPhase::release)].p50_us, f[at(LaunchPhase::job_started)].p50_us + 200.0);
  EXPECT_GE(f[at(LaunchPhase::wait_return)].p50_us, f[at(LaunchPhase::release)].p50_us);
  EXPECT_EQ(f[at(LaunchPhase::interrupt)].samples, 0u);  // never marked
  EXPECT_EQ(f[at(LaunchPhase::release)].name, "release");
}

TEST_F(LaunchTraceTest, AWaitWithoutEngineWorkIsNotALaunch) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::api_entry}, {LaunchPhase::job_started, 50}});
  LaunchTrace::mark(LaunchPhase::doorbell);  // a submission that started no engine work
  LaunchTrace::launch_waited();
  EXPECT_EQ(LaunchTrace::launches(), 0u);
}

TEST_F(LaunchTraceTest, APhaseMarkedBeforeTheDoorbellBelongsToAnEarlierLaunch) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::interrupt, 50},  // the previous launch's
                {LaunchPhase::api_entry},
                {LaunchPhase::doorbell},
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  EXPECT_EQ(LaunchTrace::figures()[at(LaunchPhase::interrupt)].samples, 0u);
  EXPECT_EQ(LaunchTrace::figures()[at(LaunchPhase::job_started)].samples, 1u);
}

// The mediator's physical ring (doorbell_seen) and PFIFO's wake-up come
// inside the guest's trapped doorbell write: kept from the launch call on,
// as negative offsets; one before the call is an earlier launch's.
TEST_F(LaunchTraceTest, ThePhysicalRingInsideTheTrapIsKeptBeforeTheDoorbell) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::pfifo_woke, 50},  // an earlier launch's
                {LaunchPhase::api_entry, 100},
                {LaunchPhase::doorbell_seen, 100},
                {LaunchPhase::doorbell},
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  const auto f = LaunchTrace::figures();
  EXPECT_EQ(f[at(LaunchPhase::doorbell_seen)].samples, 1u);
  EXPECT_LE(f[at(LaunchPhase::doorbell_seen)].p50_us, -100.0);
  EXPECT_GE(f[at(LaunchPhase::doorbell_seen)].p50_us, f[at(LaunchPhase::api_entry)].p50_us + 100.0);
  EXPECT_EQ(f[at(LaunchPhase::pfifo_woke)].samples, 0u);
}

// PFIFO's loop passes its pick many times a launch: only the first pass
// after the physical ring is its wake-up.
TEST_F(LaunchTraceTest, TheFirstMarkAfterAnotherPhaseIsTheOneKept) {
  LaunchTrace::enable(true);
  LaunchTrace::mark(LaunchPhase::api_entry);
  LaunchTrace::mark(LaunchPhase::doorbell_seen);
  sleep_us(100);
  LaunchTrace::mark_first_after(LaunchPhase::pfifo_woke, LaunchPhase::doorbell_seen);
  LaunchTrace::mark(LaunchPhase::doorbell);
  sleep_us(200);
  LaunchTrace::mark_first_after(LaunchPhase::pfifo_woke, LaunchPhase::doorbell_seen);  // a later pass: not kept
  LaunchTrace::mark(LaunchPhase::job_started);
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  const auto f = LaunchTrace::figures();
  EXPECT_EQ(f[at(LaunchPhase::pfifo_woke)].samples, 1u);
  EXPECT_LT(f[at(LaunchPhase::pfifo_woke)].p50_us, 100.0);
  EXPECT_GE(f[at(LaunchPhase::pfifo_woke)].p50_us, f[at(LaunchPhase::doorbell_seen)].p50_us + 100.0);
}

// PFIFO running out of work after the last launch (its tail): kept from
// the launch call on, before the ring (PFIFO waited for it) or after (it
// was still busy when the ring came); one before the call is not kept.
TEST_F(LaunchTraceTest, PfifoRunningDryIsKeptFromTheCallOnEitherSideOfTheRing) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::pfifo_idle, 50},  // long before this launch's call
                {LaunchPhase::api_entry},
                {LaunchPhase::doorbell_seen},
                {LaunchPhase::doorbell},
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 1u);
  EXPECT_EQ(LaunchTrace::figures()[at(LaunchPhase::pfifo_idle)].samples, 0u);

  mark_in_turn({{LaunchPhase::api_entry, 100},
                {LaunchPhase::pfifo_idle, 100},  // waiting before the ring
                {LaunchPhase::doorbell_seen},
                {LaunchPhase::doorbell},
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  mark_in_turn({{LaunchPhase::api_entry},
                {LaunchPhase::doorbell_seen},
                {LaunchPhase::doorbell, 100},
                {LaunchPhase::pfifo_idle},  // still busy at the ring
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 3u);
  const auto f = LaunchTrace::figures();
  EXPECT_EQ(f[at(LaunchPhase::pfifo_idle)].samples, 2u);
  EXPECT_LE(f[at(LaunchPhase::pfifo_idle)].p10_us, -100.0);
  EXPECT_GE(f[at(LaunchPhase::pfifo_idle)].p90_us, 100.0);
}

// PFIFO busy at the ring and its loop's first pass after it: kept from
// the call on, like the ring itself (negative when inside the trap).
TEST_F(LaunchTraceTest, PfifoBusyAtTheRingAndItsNextPassAreKeptFromTheCallOn) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::pfifo_busy, 50},  // an earlier launch's ring
                {LaunchPhase::api_entry},
                {LaunchPhase::doorbell_seen},
                {LaunchPhase::pfifo_pass, 100},
                {LaunchPhase::doorbell},
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  mark_in_turn({{LaunchPhase::api_entry},
                {LaunchPhase::doorbell_seen},
                {LaunchPhase::pfifo_busy, 100},
                {LaunchPhase::doorbell},
                {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();
  ASSERT_EQ(LaunchTrace::launches(), 2u);
  const auto f = LaunchTrace::figures();
  EXPECT_EQ(f[at(LaunchPhase::pfifo_busy)].samples, 1u);
  EXPECT_LE(f[at(LaunchPhase::pfifo_busy)].p50_us, -100.0);
  EXPECT_EQ(f[at(LaunchPhase::pfifo_pass)].samples, 1u);
  EXPECT_LE(f[at(LaunchPhase::pfifo_pass)].p50_us, -100.0);
}

TEST_F(LaunchTraceTest, ACopyTheDriverMakesOnItsOwnIsNotAKernelLaunch) {
  LaunchTrace::enable(true);
  mark_in_turn({{LaunchPhase::api_entry}, {LaunchPhase::doorbell}, {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();  // the kernel launch
  mark_in_turn({{LaunchPhase::doorbell}, {LaunchPhase::job_started}});
  LaunchTrace::launch_waited();  // a staging copy: no launch call of its own
  EXPECT_EQ(LaunchTrace::launches(), 1u);
}

}  // namespace
}  // namespace vgpu
