// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter over clang-14's PTX of ordinary kernels (test_kernels.h).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "gpu/ptx/test_kernels.h"
#include "gpu/ptx/test_memory.h"
#include "ptx/module.h"

namespace vgpu::ptx::testing {
namespace {

// Every test runs whole (0) and as a resumable launch that yields every 3
// warp instructions: the same results, bit for bit.
class PtxInterpreter : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override { yield_every() = GetParam(); }
  void TearDown() override { yield_every() = 0; }
};

TEST_P(PtxInterpreter, VectorAdd) {
  FakeMemory mem(1 << 20);
  int n = 1000;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 0.5f * static_cast<float>(i);
  uint64_t va = mem.put(a), vb = mem.put(b), vc = mem.alloc(n * 4);
  Params p(kernels(), "_Z4vaddPKfS0_Pfi");
  p.set(0, va).set(1, vb).set(2, vc).set(3, n);
  auto r = launch(kernels(), mem, "_Z4vaddPKfS0_Pfi", {4, 1, 1}, {256, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < n; ++i) ASSERT_EQ(mem.at<float>(vc)[i], a[i] + b[i]) << i;
  EXPECT_GT(r->warp_instructions, 0u);
}

TEST_P(PtxInterpreter, Saxpy) {
  FakeMemory mem(1 << 20);
  int n = 3000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i), y[i] = 1.0f / static_cast<float>(i + 1);
  uint64_t vx = mem.put(x), vy = mem.put(y);
  Params p(kernels(), "_Z5saxpyifPKfPf");
  p.set(0, n).set(1, 3.0f).set(2, vx).set(3, vy);
  auto r = launch(kernels(), mem, "_Z5saxpyifPKfPf", {12, 1, 1}, {256, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < n; ++i) ASSERT_EQ(mem.at<float>(vy)[i], std::fma(x[i], 3.0f, y[i])) << i;
}

TEST_P(PtxInterpreter, TiledMatmulWithBarriers) {
  FakeMemory mem(1 << 20);
  int n = 64;
  std::vector<float> a(n * n), b(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = static_cast<float>(i % 7), b[i] = static_cast<float>(i % 5) - 2;
  uint64_t va = mem.put(a), vb = mem.put(b), vc = mem.alloc(n * n * 4);
  Params p(kernels(), "_Z6matmulPKfS0_Pfi");
  p.set(0, va).set(1, vb).set(2, vc).set(3, n);
  auto r = launch(kernels(), mem, "_Z6matmulPKfS0_Pfi", {4, 4, 1}, {16, 16, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
      ASSERT_EQ(mem.at<float>(vc)[i * n + j], acc) << i << "," << j;
    }
}

TEST_P(PtxInterpreter, BlockReduction) {
  FakeMemory mem(1 << 20);
  int n = 256 * 8;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 13);
  uint64_t vi = mem.put(in), vo = mem.alloc(8 * 4);
  Params p(kernels(), "_Z6reducePKfPfi");
  p.set(0, vi).set(1, vo).set(2, n - 5);
  auto r = launch(kernels(), mem, "_Z6reducePKfPfi", {8, 1, 1}, {256, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int b = 0; b < 8; ++b) {
    float want = 0;
    for (int i = b * 256; i < std::min(n - 5, (b + 1) * 256); ++i) want += in[i];
    EXPECT_EQ(mem.at<float>(vo)[b], want) << b;
  }
}

TEST_P(PtxInterpreter, WarpReductionWithShuffleAndBallot) {
  FakeMemory mem(1 << 20);
  std::vector<uint32_t> in(128);
  for (uint32_t i = 0; i < 128; ++i) in[i] = i * 7 + (i % 3);
  uint64_t vi = mem.put(in), vo = mem.alloc(16), vb = mem.alloc(16);
  Params p(kernels(), "_Z7warpsumPKjPjS1_");
  p.set(0, vi).set(1, vo).set(2, vb);
  auto r = launch(kernels(), mem, "_Z7warpsumPKjPjS1_", {2, 1, 1}, {64, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int w = 0; w < 4; ++w) {
    uint32_t sum = 0, ballot = 0;
    for (int l = 0; l < 32; ++l) sum += in[w * 32 + l], ballot |= (in[w * 32 + l] & 1) << l;
    EXPECT_EQ(mem.at<uint32_t>(vo)[w], sum) << w;
    EXPECT_EQ(mem.at<uint32_t>(vb)[w], ballot) << w;
  }
}

TEST_P(PtxInterpreter, AtomicHistogram) {
  FakeMemory mem(1 << 20);
  int n = 5000;
  std::vector<uint8_t> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 31 + i / 7);
  uint64_t vi = mem.put(in), vb = mem.put(std::vector<int>(16, 0));
  Params p(kernels(), "_Z9histogramPKhPii");
  p.set(0, vi).set(1, vb).set(2, n);
  auto r = launch(kernels(), mem, "_Z9histogramPKhPii", {3, 1, 1}, {128, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  std::vector<int> want(16);
  for (auto v : in) want[v & 15]++;
  for (int b = 0; b < 16; ++b) EXPECT_EQ(mem.at<int>(vb)[b], want[b]) << b;
}

double fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

TEST_P(PtxInterpreter, RecursiveDeviceFunction) {
  FakeMemory mem(1 << 20);
  uint64_t vo = mem.alloc(64 * 8);
  Params p(kernels(), "_Z7recursePdi");
  p.set(0, vo).set(1, 6);
  auto r = launch(kernels(), mem, "_Z7recursePdi", {1, 1, 1}, {64, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 64; ++t) EXPECT_EQ(mem.at<double>(vo)[t], fib(6 + t % 4)) << t;
}

TEST_P(PtxInterpreter, LinkedListWalkThroughGenericLoads) {
  FakeMemory mem(1 << 20);
  struct Node {
    uint64_t next;
    int32_t value, pad;
  };
  std::vector<uint64_t> at(100);
  for (auto& a : at) a = mem.alloc(sizeof(Node));
  int want = 0;
  for (int i = 0; i < 100; ++i) {
    *mem.at<Node>(at[i]) = Node{i + 1 < 100 ? at[(i * 37 + 1) % 100 == 0 ? i + 1 : i + 1] : 0, i * 3, 0};
    want += i * 3;
  }
  uint64_t vo = mem.alloc(32 * 4);
  Params p(kernels(), "_Z4walkP4NodePi");
  p.set(0, at[0]).set(1, vo);
  auto r = launch(kernels(), mem, "_Z4walkP4NodePi", {1, 1, 1}, {32, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 32; ++t) EXPECT_EQ(mem.at<int>(vo)[t], want);
}

TEST_P(PtxInterpreter, DivergentBranchesReconverge) {
  FakeMemory mem(1 << 20);
  uint64_t vo = mem.alloc(96 * 4);
  Params p(kernels(), "_Z7divergePi");
  p.set(0, vo);
  auto r = launch(kernels(), mem, "_Z7divergePi", {1, 1, 1}, {96, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 96; ++t) {
    int v = (t & 1) ? t * 3 + ((t & 2) ? 100 : -1) : t * 5;
    EXPECT_EQ(mem.at<int>(vo)[t], v + 1) << t;
  }
}

TEST_P(PtxInterpreter, LocalArrayWithDynamicIndex) {
  FakeMemory mem(1 << 20);
  std::vector<int> idx(64);
  for (int i = 0; i < 64; ++i) idx[i] = (i * 11) % 32;
  uint64_t vi = mem.put(idx), vo = mem.alloc(64 * 4);
  Params p(kernels(), "_Z8localarrPKiPi");
  p.set(0, vi).set(1, vo);
  auto r = launch(kernels(), mem, "_Z8localarrPKiPi", {1, 1, 1}, {64, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 64; ++t) EXPECT_EQ(mem.at<int>(vo)[t], idx[t] * t) << t;
}

TEST_P(PtxInterpreter, DynamicSharedMemory) {
  FakeMemory mem(1 << 20);
  uint64_t vo = mem.alloc(128 * 4);
  Params p(kernels(), "_Z9dynsharedPf");
  p.set(0, vo);
  auto r = launch(kernels(), mem, "_Z9dynsharedPf", {1, 1, 1}, {128, 1, 1}, p, 128 * 4);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 128; ++t) EXPECT_EQ(mem.at<float>(vo)[t], static_cast<float>(127 - t) * 2) << t;
  auto small = launch(kernels(), mem, "_Z9dynsharedPf", {1, 1, 1}, {128, 1, 1}, p, 64 * 4);
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().status, ExecStatus::mmu_fault);
}

TEST_P(PtxInterpreter, StructByValue) {
  FakeMemory mem(1 << 20);
  struct P {
    float scale;
    double offset;
    char tag;
    int arr[3];
  } s{1.5f, 0.25, 3, {10, 20, 30}};
  uint64_t vo = mem.alloc(32 * 8);
  Params p(kernels(), "_Z8bystruct6ParamsPd");
  p.set(0, s).set(1, vo);
  auto r = launch(kernels(), mem, "_Z8bystruct6ParamsPd", {1, 1, 1}, {32, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 32; ++t)
    EXPECT_EQ(mem.at<double>(vo)[t], 1.5f * static_cast<float>(t) + 0.25 + 3 + s.arr[t % 3]) << t;
}

TEST_P(PtxInterpreter, SlicedLaunchGivesIdenticalResults) {
  FakeMemory mem(1 << 20);
  int n = 64;
  std::vector<float> a(n * n), b(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = static_cast<float>(i % 9) * 0.5f, b[i] = static_cast<float>(i % 4);
  uint64_t va = mem.put(a), vb = mem.put(b), c1 = mem.alloc(n * n * 4), c2 = mem.alloc(n * n * 4);
  Params p1(kernels(), "_Z6matmulPKfS0_Pfi"), p2(kernels(), "_Z6matmulPKfS0_Pfi");
  p1.set(0, va).set(1, vb).set(2, c1).set(3, n);
  p2.set(0, va).set(1, vb).set(2, c2).set(3, n);
  ASSERT_TRUE(launch(kernels(), mem, "_Z6matmulPKfS0_Pfi", {4, 4, 1}, {16, 16, 1}, p1));
  LaunchConfig cfg;
  cfg.entry = static_cast<uint32_t>(kernels().find_entry("_Z6matmulPKfS0_Pfi"));
  cfg.grid = {4, 4, 1};
  cfg.block = {16, 16, 1};
  cfg.params = p2.bytes();
  for (uint64_t b0 : {0, 3, 4, 11}) {
    uint64_t b1 = b0 == 0 ? 3 : b0 == 3 ? 4 : b0 == 4 ? 11 : 16;
    auto r = run_blocks(kernels(), cfg, mem, b0, b1);
    ASSERT_TRUE(r) << r.error().message;
  }
  EXPECT_EQ(std::memcmp(mem.at<float>(c1), mem.at<float>(c2), n * n * 4), 0);
}

TEST_P(PtxInterpreter, EndlessLoopStoppedByControl) {
  FakeMemory mem(1 << 16);
  uint64_t flag = mem.put(std::vector<int>{0});
  Params p(kernels(), "_Z7endlessPi");
  p.set(0, flag);
  int polls = 0;
  ExecControl control{[&] { return ++polls < 50; }, 1000};
  auto r = launch(kernels(), mem, "_Z7endlessPi", {1, 1, 1}, {64, 1, 1}, p, 0, {}, control);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().status, ExecStatus::timeout);
  EXPECT_EQ(polls, 50);
}

TEST_P(PtxInterpreter, DeepRecursionIsAResourceError) {
  FakeMemory mem(1 << 16);
  uint64_t vo = mem.alloc(8);
  Params p(kernels(), "_Z4deepPdi");
  p.set(0, vo).set(1, 40);
  ExecLimits limits;
  limits.max_call_depth = 16;
  auto r = launch(kernels(), mem, "_Z4deepPdi", {1, 1, 1}, {1, 1, 1}, p, 0, limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().status, ExecStatus::resource);
  p.set(1, 10);
  auto ok = launch(kernels(), mem, "_Z4deepPdi", {1, 1, 1}, {1, 1, 1}, p, 0, limits);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*mem.at<double>(vo), fib(10));
}

TEST_P(PtxInterpreter, BarrierAfterPartOfTheBlockExitedReleases) {
  FakeMemory mem(1 << 16);
  uint64_t vo = mem.put(std::vector<int>(96, 0));
  Params p(kernels(), "_Z7halfbarPi");
  p.set(0, vo);
  auto r = launch(kernels(), mem, "_Z7halfbarPi", {1, 1, 1}, {96, 1, 1}, p);
  ASSERT_TRUE(r) << r.error().message;
  for (int t = 0; t < 96; ++t) EXPECT_EQ(mem.at<int>(vo)[t], t < 32 ? 0 : 1) << t;
}

TEST_P(PtxInterpreter, UnmappedGlobalFaultsWithAddressAndDirection) {
  FakeMemory mem(1 << 16);
  Params p(kernels(), "_Z4vaddPKfS0_Pfi");
  uint64_t good = mem.alloc(4096);
  p.set(0, good).set(1, good).set(2, uint64_t{0x1234000}).set(3, 64);
  auto r = launch(kernels(), mem, "_Z4vaddPKfS0_Pfi", {1, 1, 1}, {64, 1, 1}, p);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().status, ExecStatus::mmu_fault);
  EXPECT_EQ(r.error().va, 0x1234000u);
  EXPECT_TRUE(r.error().write);
  EXPECT_GT(r.error().line, 0u);
  p.set(0, uint64_t{0x99000}).set(2, good);
  auto rd = launch(kernels(), mem, "_Z4vaddPKfS0_Pfi", {1, 1, 1}, {64, 1, 1}, p);
  ASSERT_FALSE(rd);
  EXPECT_EQ(rd.error().va, 0x99000u);
  EXPECT_FALSE(rd.error().write);
}

TEST_P(PtxInterpreter, BadLaunchesAreRefused) {
  FakeMemory mem(1 << 16);
  Params p(kernels(), "_Z4vaddPKfS0_Pfi");
  EXPECT_EQ(launch(kernels(), mem, "_Z4vaddPKfS0_Pfi", {1, 1, 1}, {2048, 1, 1}, p).error().status,
            ExecStatus::bad_launch);
  LaunchConfig cfg;
  cfg.entry = 999;
  EXPECT_EQ(run_blocks(kernels(), cfg, mem, 0, 1).error().status, ExecStatus::bad_launch);
  cfg.entry = 0;
  EXPECT_EQ(run_blocks(kernels(), cfg, mem, 0, 1).error().status, ExecStatus::bad_launch);  // no params
  EXPECT_EQ(launch(kernels(), mem, "_Z9dynsharedPf", {1, 1, 1}, {32, 1, 1}, Params(kernels(), "_Z9dynsharedPf"),
                   1 << 20)
                .error()
                .status,
            ExecStatus::resource);
}

INSTANTIATE_TEST_SUITE_P(Runs, PtxInterpreter, ::testing::Values(0, 3),
                         [](const auto& p) { return p.param ? "yield_every_" + std::to_string(p.param) : "whole"; });

}  // namespace
}  // namespace vgpu::ptx::testing
