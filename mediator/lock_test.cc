// SPDX-License-Identifier: GPL-2.0-or-later
// Mediator locks: work deferred while a thread holds one runs once the
// thread holds none, with every lock released, exactly once.
#include "mediator/lock.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

namespace vgpu::mediator {
namespace {

struct RecordingSink final : DeferredSink {
  std::function<void()> on_run;
  int runs = 0;
  void run_deferred_events() override {
    ++runs;
    if (on_run) on_run();
  }
};

TEST(MediatorLock, CountsNestedLocksOfThisThreadOnly) {
  std::mutex a, b;
  EXPECT_FALSE(MediatorLock::held());
  {
    MediatorLock la(a);
    EXPECT_TRUE(MediatorLock::held());
    bool other_thread_holds = true;
    std::thread([&] { other_thread_holds = MediatorLock::held(); }).join();
    EXPECT_FALSE(other_thread_holds);
    {
      MediatorLock lb(b);
      EXPECT_TRUE(MediatorLock::held());
    }
    EXPECT_TRUE(MediatorLock::held());
  }
  EXPECT_FALSE(MediatorLock::held());
}

TEST(MediatorLock, DeferredWorkRunsAfterTheLastReleaseWithNothingHeld) {
  std::mutex a, b;
  RecordingSink sink;
  bool held_at_run = true, a_free = false, b_free = false;
  sink.on_run = [&] {
    held_at_run = MediatorLock::held();
    a_free = a.try_lock();
    if (a_free) a.unlock();
    b_free = b.try_lock();
    if (b_free) b.unlock();
  };
  {
    MediatorLock la(a);
    {
      MediatorLock lb(b);
      MediatorLock::defer(sink);
      MediatorLock::defer(sink);  // once per release, however often deferred
    }
    EXPECT_EQ(sink.runs, 0) << "ran while the outer lock was still held";
  }
  EXPECT_EQ(sink.runs, 1);
  EXPECT_FALSE(held_at_run);
  EXPECT_TRUE(a_free);
  EXPECT_TRUE(b_free);
  { MediatorLock la(a); }
  EXPECT_EQ(sink.runs, 1) << "ran again without being deferred again";
}

TEST(MediatorLock, WorkDeferredByDeferredWorkAlsoRuns) {
  std::mutex m;
  RecordingSink first, second;
  first.on_run = [&] {
    MediatorLock again(m);
    MediatorLock::defer(second);
  };
  {
    MediatorLock l(m);
    MediatorLock::defer(first);
  }
  EXPECT_EQ(first.runs, 1);
  EXPECT_EQ(second.runs, 1);
  EXPECT_FALSE(MediatorLock::held());
}

}  // namespace
}  // namespace vgpu::mediator
