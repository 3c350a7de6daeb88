// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/spin_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace vgpu {
namespace {

TEST(LockSpinning, TakesAFreeMutex) {
  std::mutex m;
  std::unique_lock l(m, std::defer_lock);
  lock_spinning(l);
  EXPECT_TRUE(l.owns_lock());
  EXPECT_FALSE(m.try_lock());
}

// Held briefly (within the spin) and held long (past it, so the caller
// blocks): either way the caller gets the mutex only after the holder let
// go, and the holder's write is visible to it.
TEST(LockSpinning, WaitsForTheHolderWhetherItLetsGoSoonOrLate) {
  for (const auto hold : {std::chrono::microseconds(2), std::chrono::microseconds(5'000)}) {
    std::mutex m;
    std::atomic<bool> held{false};
    int value = 0;
    std::thread holder([&] {
      std::lock_guard g(m);
      held = true;
      std::this_thread::sleep_for(hold);
      value = 1;
    });
    while (!held) std::this_thread::yield();
    std::unique_lock l(m, std::defer_lock);
    lock_spinning(l);
    EXPECT_TRUE(l.owns_lock());
    EXPECT_EQ(value, 1) << "got the mutex while it was held (" << hold.count() << " us)";
    l.unlock();
    holder.join();
  }
}

}  // namespace
}  // namespace vgpu
