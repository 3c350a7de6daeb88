// SPDX-License-Identifier: GPL-2.0-or-later
// Resumable launches (LaunchRun, docs/ptx.md "Resumable runs"): a launch
// stopped at instruction boundaries and resumed computes exactly what one
// run computes (memory and counters, byte for byte), whatever the stops;
// an endless loop yields and is ended by its control; the kept state is
// bounded.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu/ptx/test_kernels.h"
#include "gpu/ptx/test_memory.h"
#include "ptx/module.h"
#include "vgpu/bits.h"

namespace vgpu::ptx::testing {
namespace {

constexpr size_t kMemory = 1 << 20;

// One launch's inputs, written into a fresh FakeMemory the same way each time.
struct Case {
  const char* entry;
  Dim3 grid, block;
  uint32_t dyn_shared = 0;
};

// Fills memory with a pattern (the kernels' inputs) and packs parameters
// that point into it, so every kernel reads data and writes results.
void prepare(FakeMemory& mem, const Case& k, Params& p, uint64_t& base) {
  std::vector<uint32_t> words(kMemory / 4 / 2);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u % 31);
  base = mem.put(words);
  const EntryInfo& e = kernels().entries()[static_cast<size_t>(kernels().find_entry(k.entry))];
  for (size_t i = 0; i < e.params.size(); ++i) {
    const uint64_t pointer = base + i * 64 * KiB;  // each pointer parameter its own region
    if (e.params[i].size == 8) p.set(i, pointer);
    if (e.params[i].size == 4) p.set(i, uint32_t{200});  // counts and sizes
  }
}

struct Outcome {
  std::expected<ExecStats, ExecError> exec;
  std::vector<std::byte> memory;
  uint64_t runs = 0;
};

Outcome run_case(const Case& k, uint64_t yield_every_n) {
  FakeMemory mem(kMemory + 4096);
  Params p(kernels(), k.entry);
  uint64_t base = 0;
  prepare(mem, k, p, base);
  yield_every() = yield_every_n;
  auto r = launch(kernels(), mem, k.entry, k.grid, k.block, p, k.dyn_shared);
  yield_every() = 0;
  Outcome o{r, std::vector<std::byte>(kMemory / 2), yield_every_n ? last_runs() : 1};
  std::memcpy(o.memory.data(), mem.at<std::byte>(base), o.memory.size());
  return o;
}

TEST(PtxResume, ResumedRunsMatchAWholeRunByteForByte) {
  const Case cases[] = {
      {"_Z4vaddPKfS0_Pfi", {2, 1, 1}, {128, 1, 1}},   {"_Z6matmulPKfS0_Pfi", {2, 2, 1}, {16, 16, 1}},
      {"_Z6reducePKfPfi", {2, 1, 1}, {256, 1, 1}},    {"_Z7warpsumPKjPjS1_", {2, 1, 1}, {64, 1, 1}},
      {"_Z9histogramPKhPii", {3, 1, 1}, {128, 1, 1}}, {"_Z7divergePi", {1, 1, 1}, {96, 1, 1}},
      {"_Z8localarrPKiPi", {1, 1, 1}, {64, 1, 1}},    {"_Z9dynsharedPf", {1, 1, 1}, {128, 1, 1}, 128 * 4},
      {"_Z7halfbarPi", {1, 1, 1}, {96, 1, 1}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.entry);
    const Outcome whole = run_case(k, 0);
    ASSERT_TRUE(whole.exec) << whole.exec.error().message;
    for (uint64_t every : {1, 2, 7, 1000}) {
      SCOPED_TRACE(every);
      const Outcome resumed = run_case(k, every);
      ASSERT_TRUE(resumed.exec) << resumed.exec.error().message;
      EXPECT_EQ(resumed.exec->warp_instructions, whole.exec->warp_instructions);
      EXPECT_EQ(resumed.exec->thread_instructions, whole.exec->thread_instructions);
      EXPECT_GT(resumed.runs, whole.exec->warp_instructions / every / 2) << "it did not yield";
      EXPECT_TRUE(resumed.memory == whole.memory) << "memory differs";
    }
  }
}

TEST(PtxResume, EndlessLoopYieldsAndIsEndedByItsControl) {
  FakeMemory mem(1 << 16);
  uint64_t flag = mem.put(std::vector<int>{0});
  Params p(kernels(), "_Z7endlessPi");
  p.set(0, flag);
  LaunchConfig cfg;
  cfg.entry = static_cast<uint32_t>(kernels().find_entry("_Z7endlessPi"));
  cfg.block = {64, 1, 1};
  cfg.params = p.bytes();
  auto run = LaunchRun::start(kernels(), cfg, 0, 1);
  ASSERT_TRUE(run) << run.error().message;
  ExecControl slice{.keep_going = {}, .poll_every = 64, .yield_after = 1000, .yield_now = {}};
  for (int i = 0; i < 20; ++i) {
    auto r = (*run)->run(mem, slice);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(*r, LaunchRun::State::yielded);
    EXPECT_FALSE((*run)->finished());
  }
  EXPECT_GE((*run)->stats().warp_instructions, 20u * 1000);
  EXPECT_GT((*run)->state_bytes(), 0u);
  ExecControl stop{.keep_going = [] { return false; }, .poll_every = 64, .yield_after = 0, .yield_now = {}};
  auto r = (*run)->run(mem, stop);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().status, ExecStatus::timeout);
  auto again = (*run)->run(mem, slice);  // over: the same error
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().status, ExecStatus::timeout);
}

TEST(PtxResume, StopBlockEndsARunBetweenBlocks) {
  FakeMemory mem(1 << 20);
  std::vector<float> a(1024, 1.0f), b(1024, 2.0f);
  uint64_t va = mem.put(a), vb = mem.put(b), vc = mem.alloc(1024 * 4);
  Params p(kernels(), "_Z4vaddPKfS0_Pfi");
  p.set(0, va).set(1, vb).set(2, vc).set(3, 1024);
  LaunchConfig cfg;
  cfg.entry = static_cast<uint32_t>(kernels().find_entry("_Z4vaddPKfS0_Pfi"));
  cfg.grid = {8, 1, 1};
  cfg.block = {128, 1, 1};
  cfg.params = p.bytes();
  auto run = LaunchRun::start(kernels(), cfg, 0, 8);
  ASSERT_TRUE(run);
  for (uint64_t stop : {3, 5, 8}) {
    auto r = (*run)->run(mem, {}, stop);
    ASSERT_TRUE(r);
    EXPECT_EQ((*run)->next_block(), stop);
    EXPECT_EQ(*r, stop == 8 ? LaunchRun::State::finished : LaunchRun::State::yielded);
  }
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(mem.at<float>(vc)[i], 3.0f) << i;
}

TEST(PtxResume, KeptStateIsBounded) {
  FakeMemory mem(1 << 16);
  Params p(kernels(), "_Z4vaddPKfS0_Pfi");
  LaunchConfig cfg;
  cfg.entry = static_cast<uint32_t>(kernels().find_entry("_Z4vaddPKfS0_Pfi"));
  cfg.block = {1024, 1, 1};
  cfg.params = p.bytes();
  ExecLimits tight;
  tight.max_state_bytes = 64 * KiB;  // less than 32 warps' registers
  auto run = LaunchRun::start(kernels(), cfg, 0, 1, tight);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().status, ExecStatus::resource);
  // Frames pushed by calls count too: recursion stops at the state bound.
  Params rp(kernels(), "_Z4deepPdi");
  uint64_t vo = mem.alloc(8);
  rp.set(0, vo).set(1, 40);
  LaunchConfig rc;
  rc.entry = static_cast<uint32_t>(kernels().find_entry("_Z4deepPdi"));
  rc.params = rp.bytes();
  auto start = LaunchRun::start(kernels(), rc, 0, 1);
  ASSERT_TRUE(start);
  ExecLimits frames;
  frames.max_state_bytes = (*start)->state_bytes() + 4 * KiB;
  auto deep = run_blocks(kernels(), rc, mem, 0, 1, frames);
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().status, ExecStatus::resource);
  EXPECT_NE(deep.error().message.find("state"), std::string::npos) << deep.error().message;
}

}  // namespace
}  // namespace vgpu::ptx::testing
