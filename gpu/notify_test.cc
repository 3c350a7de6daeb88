// SPDX-License-Identifier: GPL-2.0-or-later
// The deliverer of PFIFO's deliveries (notify.h): whatever was queued
// before an ask is delivered after it, in order, one delivery at a time,
// whether the thread polled or slept, while a delivery ran, and at its end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "gpu/notify.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t SPIN_NS = 50'000;
constexpr auto WAIT_FOR = std::chrono::seconds(5);

// A queue that the deliverer drains, as the model's event queue is.
struct Queue {
  std::mutex mutex;
  std::deque<int> queued;
  std::vector<int> delivered;
  std::atomic<int> in_delivery{0}, most_at_once{0};

  void push(int v) {
    std::lock_guard l(mutex);
    queued.push_back(v);
  }
  void drain() {
    const int now = in_delivery.fetch_add(1) + 1;
    int most = most_at_once.load();
    while (now > most && !most_at_once.compare_exchange_weak(most, now)) {
    }
    std::lock_guard l(mutex);
    while (!queued.empty()) {
      delivered.push_back(queued.front());
      queued.pop_front();
    }
    in_delivery.fetch_sub(1);
  }
  size_t count() {
    std::lock_guard l(mutex);
    return delivered.size();
  }
  bool wait_for(size_t n) {
    const auto end = std::chrono::steady_clock::now() + WAIT_FOR;
    while (count() < n && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::microseconds(50));
    return count() >= n;
  }
};

TEST(Deliverer, EachAskDeliversWhatWasQueuedBeforeItInOrder) {
  Queue q;
  std::atomic<int> marks{0};
  Deliverer d([&] { q.drain(); }, [&] { marks.fetch_add(1); }, SPIN_NS);
  constexpr int N = 2000;
  for (int i = 0; i < N; ++i) {
    q.push(i);
    d.ask();
  }
  ASSERT_TRUE(q.wait_for(N));
  std::lock_guard l(q.mutex);
  for (int i = 0; i < N; ++i) ASSERT_EQ(q.delivered[i], i);
  EXPECT_EQ(q.most_at_once.load(), 1);
  EXPECT_GE(d.deliveries(), 1u);
  EXPECT_LE(d.deliveries(), uint64_t{N});
  EXPECT_EQ(marks.load(), static_cast<int>(d.deliveries()));
}

// With no poll the thread sleeps after each delivery: an ask wakes it.
TEST(Deliverer, AnAskWakesASleepingThread) {
  Queue q;
  Deliverer d([&] { q.drain(); }, {}, 0);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // asleep by now
    q.push(i);
    d.ask();
    ASSERT_TRUE(q.wait_for(static_cast<size_t>(i) + 1)) << "ask " << i << " was not delivered";
  }
}

// An ask made while a delivery runs (after it took the queue) brings
// another delivery: the item queued meanwhile is not left behind.
TEST(Deliverer, AnAskDuringADeliveryBringsTheNextOne) {
  Queue q;
  std::atomic<bool> in_first{false}, release_first{false};
  std::atomic<int> calls{0};
  Deliverer d(
      [&] {
        if (calls.fetch_add(1) == 0) {
          q.drain();
          in_first.store(true);
          while (!release_first.load()) std::this_thread::yield();
          return;
        }
        q.drain();
      },
      {}, SPIN_NS);
  q.push(1);
  d.ask();
  const auto end = std::chrono::steady_clock::now() + WAIT_FOR;
  while (!in_first.load() && std::chrono::steady_clock::now() < end) std::this_thread::yield();
  ASSERT_TRUE(in_first.load());
  q.push(2);
  d.ask();
  release_first.store(true);
  ASSERT_TRUE(q.wait_for(2));
  EXPECT_GE(calls.load(), 2);
}

// What was asked for before the deliverer ends is delivered by its end
// (the model stops PFIFO first, then its deliverer).
TEST(Deliverer, AsksBeforeItsEndAreDelivered) {
  for (uint64_t spin : {uint64_t{0}, SPIN_NS}) {
    Queue q;
    {
      Deliverer d([&] { q.drain(); }, {}, spin);
      q.push(7);
      d.ask();
    }
    EXPECT_EQ(q.count(), 1u) << "spin " << spin;
  }
}

}  // namespace
}  // namespace vgpu::gpu
