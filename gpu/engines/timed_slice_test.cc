// SPDX-License-Identifier: GPL-2.0-or-later
// Timed slicing (docs/spec/vgpu.md §10.5, a timed CHAN_SLICE): launches
// and copies run in pieces of about the slice's time, each bounded by the
// piece budget (ENGINE_TIMEOUT) alone, so that long legal work completes
// in pieces instead of being ended; in virtual time, where the pieces are
// sized exactly by the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/engines/piece_sizer.h"
#include "gpu/engines/testing/compute_launch.h"
#include "gpu/engines/testing/copy_methods.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu {
namespace {

using cls::Kernel;
using testing::Method;

// Slicing is the model's: a device back end runs launches and copies whole
// (docs/cuda.md), so these run on the model only.
class TimedSliceTest : public testing::ComputeLaunchEnv {
 protected:
  void SetUp() override {
    testing::EngineEnv::SetUp();
    if (device_engines_) GTEST_SKIP() << "a device back end runs work whole";
  }

  static constexpr uint64_t DATA_VA = LINEAR_VA + 0x10000;

  // A built-in launch of `blocks` blocks with these arguments, its pieces
  // run as PFIFO runs them (EngineEnv::send).
  template <typename Args>
  MethodDone launch(Kernel kernel, const Args& args, uint32_t blocks) {
    write_program(static_cast<uint32_t>(kernel));
    std::vector<Method> m = program_and_args(args);
    testing::append(m, grid(blocks));
    m.push_back({cls::compute::LAUNCH, 0});
    return send(compute_, m);
  }

  // An sgemm of 2 x 3 tiles of C (the last of each row and column
  // partial) with values whose products and sums round, so that a
  // different blocking of the product would show; C is written to two
  // places, one for the whole launch and one for the divided one.
  struct SgemmPair {
    static constexpr uint32_t M = kernels::SGEMM_TILE_ROWS + 7, N = 2 * kernels::SGEMM_TILE_COLS + 5, K = 96;
    static constexpr uint64_t A = DATA_VA, B = A + 0x20000, C_WHOLE = B + 0x70000, C_DIVIDED = C_WHOLE + 0x110000;
    static_assert(uint64_t{M} * K * 4 <= B - A && uint64_t{K} * N * 4 <= C_WHOLE - B &&
                  uint64_t{M} * N * 4 <= C_DIVIDED - C_WHOLE);
    static cls::SgemmArgs args(uint64_t c) { return {A, B, c, M, N, K, 1.0f, 0.5f, 0}; }
  };
  void write_sgemm_pair() {
    std::vector<float> a(SgemmPair::M * SgemmPair::K), b(SgemmPair::K * SgemmPair::N),
        c(SgemmPair::M * SgemmPair::N, 1.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i) * 0.37f);
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<float>(i) * 0.11f);
    write_vec(SgemmPair::A, a);
    write_vec(SgemmPair::B, b);
    write_vec(SgemmPair::C_WHOLE, c);
    write_vec(SgemmPair::C_DIVIDED, c);
  }
  // Whether the divided launch's C is bit for bit the whole one's.
  bool sgemm_pair_equal() {
    const size_t n = size_t{SgemmPair::M} * SgemmPair::N;
    const auto whole = read_vec<float>(SgemmPair::C_WHOLE, n);
    const auto divided = read_vec<float>(SgemmPair::C_DIVIDED, n);
    return divided.size() == whole.size() &&
           std::memcmp(divided.data(), whole.data(), whole.size() * sizeof(float)) == 0;
  }

  ComputeObject compute_;
};

// The sizer: the first chunk as asked, then what fits the time left at the
// measured speed, growing at most CHUNK_GROWTH times what was done.
TEST(PieceSizer, FitsTheTimeLeftAtTheMeasuredSpeedAndGrowsBoundedly) {
  const PieceSizer s(1000, 10);
  EXPECT_EQ(s.next(0, 0, 100), 10u);
  EXPECT_EQ(s.next(0, 0, 4), 4u) << "never more than is left";
  EXPECT_EQ(s.next(10, 100, 1000), 40u) << "900 ns left would fit 90: growth is capped at 4x the 10 done";
  EXPECT_EQ(s.next(50, 500, 1000), 50u) << "500 ns left at 10 ns a unit";
  EXPECT_EQ(s.next(50, 1000, 1000), 0u) << "the piece has had its time";
  EXPECT_EQ(s.next(0, 5000, 10), 10u) << "a piece always runs its first chunk";
  EXPECT_EQ(s.next(1, 5000, 10), 0u);
  EXPECT_EQ(s.next(1, 999, 10), 1u) << "at least one unit while time is left";
}

// A fill of 512 Ki elements (2048 blocks) with 5 us pieces: several pieces,
// the same result as whole, and the pieces' costs add up to the whole
// launch's plus one launch cost per extra piece.
TEST_F(TimedSliceTest, AFillRunsInPiecesOfTheSliceAndComputesWhatItDoesWhole) {
  constexpr uint32_t N = 512 * 1024;
  const uint64_t dst = DATA_VA;
  slice_ns_ = 5'000;
  ASSERT_TRUE(launch(Kernel::fill, cls::FillArgs{dst, N, 2.5f}, N / 256).has_value());
  EXPECT_EQ(read_vec<float>(dst, N), std::vector<float>(N, 2.5f));
  const uint64_t whole = kernels::stream_cost_ns(cost_, uint64_t{N} * sizeof(float));  // launch_ns included
  EXPECT_GE(pieces_, 3);
  EXPECT_NEAR(static_cast<double>(clock_.now_ns()),
              static_cast<double>(whole + static_cast<uint64_t>(pieces_ - 1) * cost_.launch_ns), pieces_ * 1.0);
}

// The spec's longest legal spin (10 s, one block) under the default piece
// budget (max-gpu-ms 4000) and 7.5 ms slices (turn-ms 30): it completes in
// ceil(10 s / 7.5 ms) pieces, its pieces adding up to its duration.
TEST_F(TimedSliceTest, TheLongestLegalSpinCompletesInPiecesWithinTheDefaultPieceBudget) {
  slice_ns_ = 7'500'000;
  engine_budget_ns_ = 4'000'000'000;
  ASSERT_TRUE(launch(Kernel::spin, cls::SpinArgs{cls::MAX_SPIN_NS}, 1).has_value());
  EXPECT_EQ(pieces_, static_cast<int>((cls::MAX_SPIN_NS + slice_ns_ - 1) / slice_ns_));
  EXPECT_EQ(clock_.now_ns(), cls::MAX_SPIN_NS);
}

// Without slicing the same spin is one indivisible job, ended by the budget.
TEST_F(TimedSliceTest, WithoutSlicingTheSameSpinEndsAtThePieceBudget) {
  engine_budget_ns_ = 4'000'000'000;
  auto r = launch(Kernel::spin, cls::SpinArgs{cls::MAX_SPIN_NS}, 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::timeout);
}

// A launch shorter than the slice is not divided (a brief one keeps its
// fast path); a spin no longer than the slice neither.
TEST_F(TimedSliceTest, WorkShorterThanTheSliceRunsAsOneJob) {
  slice_ns_ = 7'500'000;
  ASSERT_TRUE(launch(Kernel::fill, cls::FillArgs{DATA_VA, 16, 1.0f}, 1).has_value());
  ASSERT_TRUE(launch(Kernel::spin, cls::SpinArgs{7'000'000}, 70).has_value());
  EXPECT_EQ(pieces_, 0);
  EXPECT_EQ(engine_runs_, 2);
}

// sgemm in timed pieces of tiles of C (2 x 3 here, the last of each
// row and column partial): bit for bit what the whole launch computes.
TEST_F(TimedSliceTest, AnSgemmInTimedPiecesMatchesTheWholeLaunch) {
  write_sgemm_pair();
  uint64_t jobs = kernels::tile_jobs();
  ASSERT_TRUE(launch(Kernel::sgemm, SgemmPair::args(SgemmPair::C_WHOLE), 128).has_value());
  EXPECT_EQ(pieces_, 0);
  EXPECT_EQ(kernels::tile_jobs() - jobs, 1u) << "the whole launch is one job of the tile pool";
  slice_ns_ = 1'000;
  jobs = kernels::tile_jobs();
  ASSERT_TRUE(launch(Kernel::sgemm, SgemmPair::args(SgemmPair::C_DIVIDED), 128).has_value());
  EXPECT_GE(pieces_, 3);
  // Chunks, each its own job ending at a barrier of all tile threads, made
  // a timed piece 1.1-1.7 times slower than the whole launch
  // (docs/scheduler.md, "Timed pieces as one pool job").
  EXPECT_EQ(kernels::tile_jobs() - jobs, static_cast<uint64_t>(pieces_)) << "one job of the tile pool per piece";
  EXPECT_TRUE(sgemm_pair_equal()) << "bit for bit";
}

// Cutting on demand (real time): while nobody asks for the engine
// (SLICE_YIELD clear) an sgemm in pieces of 1 us runs as one piece, one
// job of the tile pool, as whole; once asked, its pieces end at their time
// again. Bits as whole either way.
TEST_F(TimedSliceTest, OnDemandAnSgemmRunsAsOnePieceUntilTheEngineIsAskedFor) {
  write_sgemm_pair();
  real_time_ = true;
  std::atomic<uint32_t> yield{0};
  slice_yield_ = &yield;
  slice_ns_ = 1'000;
  uint64_t jobs = kernels::tile_jobs();
  ASSERT_TRUE(launch(Kernel::sgemm, SgemmPair::args(SgemmPair::C_WHOLE), 128).has_value());
  EXPECT_EQ(pieces_, 1) << "alone: one piece";
  EXPECT_EQ(kernels::tile_jobs() - jobs, 1u) << "one job of the tile pool, as whole";
  yield.store(regs::pfifo::SliceYieldRequest::mask);
  pieces_ = 0;
  jobs = kernels::tile_jobs();
  ASSERT_TRUE(launch(Kernel::sgemm, SgemmPair::args(SgemmPair::C_DIVIDED), 128).has_value());
  EXPECT_GE(pieces_, 2) << "asked for: pieces of their time (6 tiles, each piece a tile a thread at least)";
  EXPECT_EQ(kernels::tile_jobs() - jobs, static_cast<uint64_t>(pieces_));
  EXPECT_TRUE(sgemm_pair_equal()) << "bit for bit";
}

// ---------------------------------------------------------------- copies

// A multi-line copy (2048 lines of 512 bytes, about 15 us in the cost model)
// with 4 us pieces and a piece budget of 10 us, below the whole copy's
// time: it is resumed piece after piece and completes (it is divisible,
// so it is not ended for being long), and its semaphore and interrupt
// follow the last piece only.
TEST_F(TimedSliceTest, ALongCopyRunsInResumablePiecesAndItsSemaphoreFollowsTheLast) {
  using namespace cls::copy;
  constexpr uint32_t LINE = 512, LINES = 2048;
  const uint64_t src = LINEAR_VA, dst = LINEAR_VA + uint64_t{LINE} * LINES, sem = LINEAR_VA + 3 * MiB;
  const auto data = testing::pattern(uint64_t{LINE} * LINES, 9);
  write_vec(src, data);
  write_vec(sem, std::vector<uint32_t>{0});
  slice_ns_ = 4'000;
  engine_budget_ns_ = 10'000;
  CopyObject copy;
  const uint32_t launch_dma = testing::COPY_LINEAR | LaunchMultiLine::make(1) |
                              LaunchSemaphoreType::make(uint32_t(SemRelease::one_word)) |
                              LaunchInterruptType::make(uint32_t(Interrupt::non_blocking));
  std::vector<Method> m = testing::copy_lines(src, dst, LINE, LINES, LINE, LINE);
  m.insert(m.end(), {{SET_SEMAPHORE_A, hi32(sem)},
                     {SET_SEMAPHORE_B, lo32(sem)},
                     {SET_SEMAPHORE_PAYLOAD, 77},
                     {LAUNCH_DMA, launch_dma}});
  ASSERT_TRUE(send(copy, m).has_value());
  EXPECT_EQ(read_vec<uint8_t>(dst, data.size()), data);
  const uint64_t whole_ns = kernels::stream_cost_ns(cost_, uint64_t{LINE} * LINES * 2);
  EXPECT_GE(pieces_, static_cast<int>(whole_ns / slice_ns_));
  EXPECT_EQ(read32(sem), 77u);
  EXPECT_EQ(nonstalls_, 1);
  EXPECT_EQ(engine_runs_, 1);
}

}  // namespace
}  // namespace vgpu::gpu
