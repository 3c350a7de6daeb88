// SPDX-License-Identifier: GPL-2.0-or-later
// Every workload end to end through the guest driver: correct in native
// mode, and bit-identical outputs under full virtualization. Full sizes in
// the plain build; reduced sizes under sanitizers or with
// VGPU_WORKLOADS_REDUCED=1 (the benchmarks always use full sizes).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "testbed/workloads/kernel_io.h"
#include "testbed/workloads/run.h"
#include "testbed/workloads/support.h"

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
  // Only the workload that times single launches reports their p50, and
  // a launch takes no longer than the run it is part of.
  if (GetParam().name == "launch") {
    ASSERT_TRUE(r.launch_p50_us) << r.detail;
    EXPECT_GT(*r.launch_p50_us, 0.0);
    EXPECT_LE(*r.launch_p50_us, r.seconds[0] * 1e6);
  } else {
    EXPECT_FALSE(r.launch_p50_us) << r.detail;
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, NativeWorkload, ::testing::ValuesIn(registry().begin(), registry().end()),
                         [](const auto& p) { return test_name(p.param.name); });

// Runs `workload` as `reference` and as `tried` into `want` and `got`:
// both run, and the tried run's output is correct and equals the
// reference's bit for bit (the same checksum).
void expect_same_output(std::string_view workload, const RunConfig& reference, const RunConfig& tried,
                        std::vector<VmRun>& want, std::vector<VmRun>& got) {
  const WorkloadSpec* spec = find(workload);
  ASSERT_NE(spec, nullptr);
  auto w = run_workload(*spec, reference);
  ASSERT_TRUE(w) << w.error().what();
  auto g = run_workload(*spec, tried);
  ASSERT_TRUE(g) << g.error().what();
  want = std::move(*w);
  got = std::move(*g);
  const WorkloadResult& r = got[0].result;
  EXPECT_TRUE(r.correct) << r.detail;
  EXPECT_EQ(r.checksum, want[0].result.checksum);
}

// The outputs under full virtualization equal native ones bit for bit.
struct FvCase {
  std::string_view workload;
  Mode mode;
};

class FvWorkload : public ::testing::TestWithParam<FvCase> {};

TEST_P(FvWorkload, OutputsEqualNativeBitwise) {
  RunConfig native, fv;
  native.options = fv.options = test_options();
  fv.mode = GetParam().mode;
  std::vector<VmRun> want, got;
  ASSERT_NO_FATAL_FAILURE(expect_same_output(GetParam().workload, native, fv, want, got));
  ASSERT_TRUE(got[0].counters);
  EXPECT_GT(got[0].counters->trapped(), 0u);
  // Work reached the mediator's channels. Not `submissions`: that counts
  // scheduler turns, and a turn begun before the timed runs may carry all
  // of them (a turn rings each new GPFIFO entry while its slice lasts).
  if (GetParam().workload != "open") {  // open submits no work
    EXPECT_GT(got[0].counters->doorbells, 0u);
  }
  if (GetParam().mode == Mode::pv) {
    EXPECT_EQ(got[0].counters->entries_scanned, 0u) << "PV scans no guest page table";
    if (GetParam().workload == "open" || GetParam().workload == "ctx" || GetParam().workload == "churn") {
      EXPECT_GT(got[0].counters->pv_batches, 0u);
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

// --inputs pageable|pinned: the same outputs as resident inputs in native
// mode, bit for bit, with the transfers inside every run.
struct InputCase {
  std::string_view workload;
  InputPath path;
  Mode mode;
};

class InputPaths : public ::testing::TestWithParam<InputCase> {};

TEST_P(InputPaths, OutputsEqualResidentNativeBitwise) {
  RunConfig resident, moved;
  resident.options = moved.options = test_options();
  moved.options.runs = 2;
  moved.options.inputs = GetParam().path;
  moved.mode = GetParam().mode;
  std::vector<VmRun> want, got;
  ASSERT_NO_FATAL_FAILURE(expect_same_output(GetParam().workload, resident, moved, want, got));
  const WorkloadResult& r = got[0].result;
  EXPECT_EQ(r.inputs, input_path_name(GetParam().path));
  EXPECT_EQ(want[0].result.inputs, "resident");
  if (GetParam().path == InputPath::pinned) {
    EXPECT_EQ(r.launches, 2u * 4) << "per run: two input copies, the kernel, the output copy";
  }
}

std::vector<InputCase> input_cases() {
  std::vector<InputCase> cases;
  for (Mode m : {Mode::native, Mode::fv_opt})
    for (InputPath p : {InputPath::pageable, InputPath::pinned})
      for (std::string_view w : {"gemm2", "conv3", "matmul320"}) cases.push_back({w, p, m});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Compute, InputPaths, ::testing::ValuesIn(input_cases()), [](const auto& p) {
  return test_name(p.param.workload) + "_" + input_path_name(p.param.path) + "_" + test_name(mode_name(p.param.mode));
});

TEST(InputPathNames, RoundTripAndBadNameIsNamed) {
  for (InputPath p : {InputPath::resident, InputPath::pageable, InputPath::pinned}) {
    auto back = parse_input_path(input_path_name(p));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, p);
  }
  auto bad = parse_input_path("bar2");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'bar2'"), std::string::npos) << bad.error().message;
}

// A run's transfers take the path asked for, every byte of them: pinned
// ones as copy-engine DMA from/to the pinned buffers, pageable ones as
// BAR1 or staged copies; the output read back is the device's.
class KernelIoPaths : public ::testing::TestWithParam<InputPath> {};

TEST_P(KernelIoPaths, TimedTransfersTakeThePath) {
  TestbedConfig tc;
  tc.vram_per_vm = 128 * MiB;
  auto tb = Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  const InputPath path = GetParam();
  auto st = (*tb)->run([&](Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    driver::Context& c = **ctx;
    const auto big = random_floats(3 * MiB / sizeof(float) + 5, 7);  // above direct_transfer_max: staged
    const auto small = random_floats(1000, 8);
    auto io = KernelIo::create(c, vm.device.options(), path, {big, small}, big.size());
    if (!io) return std::unexpected(io.error());
    const driver::TransferStats before = c.transfer_stats();
    if (auto s = io->before_launch(); !s) return s;
    // The "kernel": the output is a copy of the first input.
    auto f = c.copy(io->output(), 0, io->input(0), 0, big.size() * sizeof(float));
    if (!f) return std::unexpected(f.error());
    if (auto s = c.wait(*f); !s) return s;
    if (auto s = io->after_wait(); !s) return s;
    const driver::TransferStats after = c.transfer_stats();
    const uint64_t moved = (2 * big.size() + small.size()) * sizeof(float);
    const uint64_t pinned = after.pinned_bytes - before.pinned_bytes;
    const uint64_t other = after.staged_bytes - before.staged_bytes + after.direct_bytes - before.direct_bytes;
    EXPECT_EQ(pinned, path == InputPath::pinned ? moved : 0);
    EXPECT_EQ(other, path == InputPath::pageable ? moved : 0);
    EXPECT_EQ(io->transfer_launches_per_run(), path == InputPath::pinned     ? 3u
                                               : path == InputPath::pageable ? 2u * 4  // 3 MiB + 20 B: 4 chunks each
                                                                             : 0u);
    EXPECT_EQ(io->transfer_seconds().size(), 1u) << "one run timed";
    auto out = io->result();
    if (!out) return std::unexpected(out.error());
    EXPECT_TRUE(*out == big);
    EXPECT_NE(io->describe().find(path == InputPath::resident ? "resident" : input_path_name(path)), std::string::npos);
    return {};
  });
  ASSERT_TRUE(st[0]) << st[0].error().what();
}

INSTANTIATE_TEST_SUITE_P(All, KernelIoPaths,
                         ::testing::Values(InputPath::resident, InputPath::pageable, InputPath::pinned),
                         [](const auto& p) { return std::string(input_path_name(p.param)); });

}  // namespace
}  // namespace vgpu::testbed::workloads
