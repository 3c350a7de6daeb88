// SPDX-License-Identifier: GPL-2.0-or-later
// The tile pool: every tile of a call runs once, callers on several
// threads share the pool, and a tile that throws fails only its own call.
#include "gpu/kernels/tile_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace vgpu::gpu::kernels {
namespace {

TEST(TilePool, RunsEveryTileOfTheRangeOnce) {
  constexpr uint64_t FIRST = 5, END = 1005;
  std::vector<std::atomic<int>> runs(END);
  for_each_tile(FIRST, END, [&](uint64_t i) { runs[i].fetch_add(1); });
  for (uint64_t i = 0; i < END; ++i) EXPECT_EQ(runs[i].load(), i < FIRST ? 0 : 1) << "tile " << i;
  for_each_tile(7, 7, [&](uint64_t) { ADD_FAILURE() << "an empty range ran a tile"; });
  EXPECT_GE(tile_workers(), 1u);
}

TEST(TilePool, CallersOnSeveralThreadsEachGetAllTheirTiles) {
  constexpr int CALLERS = 4;
  constexpr uint64_t TILES = 300;
  std::vector<std::vector<std::atomic<int>>> runs(CALLERS);
  for (auto& r : runs) r = std::vector<std::atomic<int>>(TILES);
  std::vector<std::thread> callers;
  for (int c = 0; c < CALLERS; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 3; ++round) for_each_tile(0, TILES, [&](uint64_t i) { runs[c][i].fetch_add(1); });
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < CALLERS; ++c)
    for (uint64_t i = 0; i < TILES; ++i) EXPECT_EQ(runs[c][i].load(), 3) << "caller " << c << " tile " << i;
}

TEST(TilePool, ATileThatThrowsFailsItsCallAndThePoolGoesOn) {
  EXPECT_THROW(for_each_tile(0, 64,
                             [](uint64_t i) {
                               if (i == 10) throw std::runtime_error("tile 10");
                             }),
               std::runtime_error);
  std::atomic<uint64_t> sum = 0;
  for_each_tile(0, 100, [&](uint64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 99u * 100 / 2);
}

// A stop ends the call's job: the tiles that ran are the prefix up to the
// returned end, each once, and the first always runs (a piece progresses).
TEST(TilePool, AStopEndsTheJobAfterAPrefixOfItsTiles) {
  constexpr uint64_t FIRST = 3, END = 503, ENOUGH = 40;
  std::vector<std::atomic<int>> runs(END);
  const uint64_t jobs = tile_jobs();
  const uint64_t stopped = for_each_tile(
      FIRST, END, [&](uint64_t i) { runs[i].fetch_add(1); }, [&](uint64_t taken) { return taken >= ENOUGH; });
  EXPECT_EQ(tile_jobs() - jobs, 1u);
  EXPECT_EQ(stopped, FIRST + ENOUGH) << "asked before each tile: no tile is taken once it says stop";
  for (uint64_t i = 0; i < END; ++i) EXPECT_EQ(runs[i].load(), i >= FIRST && i < stopped ? 1 : 0) << "tile " << i;
  EXPECT_EQ(for_each_tile(
                FIRST, END, [](uint64_t) {}, [](uint64_t) { return true; }),
            FIRST + 1);
}

// A stop by time can change its answer between two asks. A worker that
// found a job open once must run a tile of that job, not ask again and
// find none (it dereferenced the null job: vgpu-bench's engine threads
// crashed so under load with timed pieces). Here the stop says "stop"
// at every other ask, so that any two asks in a row disagree.
TEST(TilePool, AStopThatChangesItsAnswerBetweenAsksEndsTheJobCleanly) {
  if (tile_workers() < 2) GTEST_SKIP() << "one tile thread: no pool workers to race";
  constexpr uint64_t TILES = 64;
  constexpr int CALLS = 200;
  for (int call = 0; call < CALLS; ++call) {
    std::vector<std::atomic<int>> runs(TILES);
    std::atomic<uint64_t> asks{0};
    const uint64_t stopped = for_each_tile(
        0, TILES,
        [&](uint64_t i) {
          runs[i].fetch_add(1);
          std::this_thread::sleep_for(std::chrono::microseconds(20));  // let the workers wake
        },
        [&](uint64_t) { return asks.fetch_add(1) % 2 == 1; });
    ASSERT_GE(stopped, 1u);
    ASSERT_LE(stopped, TILES);
    for (uint64_t i = 0; i < TILES; ++i)
      ASSERT_EQ(runs[i].load(), i < stopped ? 1 : 0) << "call " << call << " tile " << i;
  }
}

}  // namespace
}  // namespace vgpu::gpu::kernels
