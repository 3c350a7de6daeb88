// SPDX-License-Identifier: GPL-2.0-or-later
// Every workload end to end through the guest driver: correct in native
// mode, and bit-identical outputs under full virtualization. Full sizes in
// the plain build; reduced sizes under sanitizers or with
// VGPU_WORKLOADS_REDUCED=1 (the benchmarks always use full sizes).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "testbed/workloads/run.h"

namespace vgpu::testbed::workloads {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
constexpr bool SANITIZED = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr bool SANITIZED = true;
#else
constexpr bool SANITIZED = false;
#endif
#else
constexpr bool SANITIZED = false;
#endif

bool reduced() {
  const char* env = std::getenv("VGPU_WORKLOADS_REDUCED");
  return SANITIZED || (env != nullptr && std::string(env) == "1");
}

WorkloadOptions test_options() {
  WorkloadOptions o;
  o.runs = 1;
  o.reduced = reduced();
  o.spin_ns = 100'000;  // LOOP: short spins
  return o;
}

std::string test_name(std::string_view name) {
  std::string n(name);
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

TEST(WorkloadRegistry, NamesAreUniqueAndFound) {
  std::set<std::string_view> names;
  for (const auto& w : registry()) {
    EXPECT_TRUE(names.insert(w.name).second) << w.name;
    EXPECT_EQ(find(w.name), &w);
    EXPECT_GT(w.default_runs, 0u);
  }
  EXPECT_EQ(find("no-such-workload"), nullptr);
}

TEST(WorkloadRegistry, MedianOfEvenAndOddCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

class NativeWorkload : public ::testing::TestWithParam<WorkloadSpec> {};

TEST_P(NativeWorkload, RunsCorrectlyThroughTheDriver) {
  RunConfig rc;
  rc.options = test_options();
  auto runs = run_workload(GetParam(), rc);
  ASSERT_TRUE(runs) << runs.error().what();
  ASSERT_EQ(runs->size(), 1u);
  const WorkloadResult& r = (*runs)[0].result;
  EXPECT_TRUE(r.correct) << r.detail;
  EXPECT_EQ(r.runs, 1u);
  ASSERT_EQ(r.seconds.size(), 1u);
  EXPECT_GT(r.seconds[0], 0.0);
  EXPECT_FALSE((*runs)[0].counters) << "native mode has no vGPU counters";
}

INSTANTIATE_TEST_SUITE_P(Suite, NativeWorkload, ::testing::ValuesIn(registry().begin(), registry().end()),
                         [](const auto& p) { return test_name(p.param.name); });

// The outputs under full virtualization equal native ones bit for bit.
struct FvCase {
  std::string_view workload;
  Mode mode;
};

class FvWorkload : public ::testing::TestWithParam<FvCase> {};

TEST_P(FvWorkload, OutputsEqualNativeBitwise) {
  const WorkloadSpec* spec = find(GetParam().workload);
  ASSERT_NE(spec, nullptr);
  RunConfig native, fv;
  native.options = fv.options = test_options();
  fv.mode = GetParam().mode;
  auto want = run_workload(*spec, native);
  ASSERT_TRUE(want) << want.error().what();
  auto got = run_workload(*spec, fv);
  ASSERT_TRUE(got) << got.error().what();
  const WorkloadResult& r = (*got)[0].result;
  EXPECT_TRUE(r.correct) << r.detail;
  EXPECT_EQ(r.checksum, (*want)[0].result.checksum);
  ASSERT_TRUE((*got)[0].counters);
  EXPECT_GT((*got)[0].counters->trapped(), 0u);
  // Work reached the mediator's channels. Not `submissions`: that counts
  // scheduler turns, and a turn begun before the timed runs may carry all
  // of them (a turn rings each new GPFIFO entry while its slice lasts).
  if (GetParam().workload != "open") {  // open submits no work
    EXPECT_GT((*got)[0].counters->doorbells, 0u);
  }
  if (GetParam().mode == Mode::pv) {
    EXPECT_EQ((*got)[0].counters->entries_scanned, 0u) << "PV scans no guest page table";
    if (GetParam().workload == "open" || GetParam().workload == "ctx" || GetParam().workload == "churn") {
      EXPECT_GT((*got)[0].counters->pv_batches, 0u);
    }
  }
}

std::vector<FvCase> fv_cases() {
  std::vector<FvCase> cases;
  for (Mode m : {Mode::fv_naive, Mode::fv_opt, Mode::pv})
    for (std::string_view w : {"gemm2", "conv3", "CPY", "LOOP", "open", "ctx", "churn"}) cases.push_back({w, m});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Subset, FvWorkload, ::testing::ValuesIn(fv_cases()), [](const auto& p) {
  return test_name(p.param.workload) + "_" + test_name(mode_name(p.param.mode));
});

}  // namespace
}  // namespace vgpu::testbed::workloads
