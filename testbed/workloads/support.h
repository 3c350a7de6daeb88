// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers the workloads share: deterministic inputs, buffers filled from
// host vectors, timing of the GPU part, output hashes and the sampled
// check against a double-precision reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "driver/runtime.h"
#include "testbed/workloads/workload.h"

namespace vgpu::testbed::workloads {

// Seconds on the steady clock.
double now_s();

// Uniform floats in [lo, hi) from splitmix64(seed): the same on every host.
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f);

// 64-bit FNV-1a over 8-byte words (then the tail bytes).
uint64_t hash_bytes(std::span<const std::byte> bytes);
template <typename T>
uint64_t hash_of(std::span<const T> v) {
  return hash_bytes(std::as_bytes(v));
}

// count distinct-enough indices in [0, n), deterministic in seed; all of
// them when n <= count.
std::vector<size_t> sample_indices(size_t n, size_t count, uint64_t seed);

// A buffer of ctx holding data.
[[nodiscard]] Result<driver::Buffer> upload_new(driver::Context& ctx, std::span<const float> data);
// Waits for an untimed launch made before a workload's timed runs (as the
// bandwidth rows make one untimed transfer): a new context's first launch
// carries one-time costs (its first interrupt, a device library's plan)
// that are not the steady state a run measures.
[[nodiscard]] Status untimed_launch(driver::Context& ctx, Result<driver::Fence> launched);
[[nodiscard]] Result<driver::Buffer> alloc_zeroed(driver::Context& ctx, size_t floats);
// The buffers of a kernel of two inputs and one output: `a` and `b`
// uploaded into new buffers of ctx (in that order), then one of out_floats
// allocated for the output.
struct TwoInputs {
  driver::Buffer a, b, out;
};
[[nodiscard]] Result<TwoInputs> upload_two(driver::Context& ctx, std::span<const float> a, std::span<const float> b,
                                           size_t out_floats);

// The sampled check: want(i) returns the reference value and the sum of
// the absolute values of its terms; an element passes when
// |got - want| <= rel * abs_sum + abs_floor.
struct Reference {
  double value;
  double abs_sum;
};
struct SampleCheck {
  size_t checked = 0;
  size_t failed = 0;
  double max_err = 0;  // |got - want| / (abs_sum + 1), the worst seen
  size_t first_bad = 0;
  bool ok() const { return checked > 0 && failed == 0; }
  std::string summary() const;
};
SampleCheck check_sampled(std::span<const float> got, std::span<const size_t> indices,
                          const std::function<Reference(size_t)>& want, double rel, double abs_floor);
// Element i of C = A * B (A m x k, B k x n, row-major), in double.
Reference sgemm_reference(std::span<const float> a, std::span<const float> b, size_t k, size_t n, size_t i);

// Turns a timed run's fence wait into a timestamp pair.
// Calls WorkloadOptions::on_timed around the timed part.
class RunTimer {
 public:
  explicit RunTimer(const WorkloadOptions& o) : on_timed_(o.on_timed) {}
  void begin() {
    if (first_ == 0 && on_timed_) on_timed_(true);
    t0_ = now_s();
    if (first_ == 0) first_ = t0_;
  }
  void end(WorkloadResult& r) {
    const double t1 = now_s();
    r.seconds.push_back(t1 - t0_);
    r.timed_begin = first_;
    r.timed_end = t1;
    if (on_timed_) on_timed_(false);
  }
 private:
  const std::function<void(bool)>& on_timed_;
  double t0_ = 0, first_ = 0;
};

// The timed part of a workload: o.runs runs of `run(i)`, each timed alone
// (RunTimer), which returns the launches it made (Result<uint32_t>); after
// each, outside the time, `check(i)` (a Status) looks at what the run did.
// r's run times, launches and runs are filled. The first failure ends it.
template <typename Run, typename Check>
Status timed_runs(const WorkloadOptions& o, WorkloadResult& r, Run run, Check check) {
  RunTimer timer(o);
  for (uint32_t i = 0; i < o.runs; ++i) {
    timer.begin();
    const Result<uint32_t> launches = run(i);
    if (!launches) return std::unexpected(launches.error());
    timer.end(r);
    r.launches += *launches;
    if (Status st = check(i); !st) return st;
  }
  r.runs = o.runs;
  return {};
}
template <typename Run>
Status timed_runs(const WorkloadOptions& o, WorkloadResult& r, Run run) {
  return timed_runs(o, r, run, [](uint32_t) -> Status { return {}; });
}

// A launch (a driver call's Result<Fence>) waited for: the one launch it
// made, or its error.
[[nodiscard]] Result<uint32_t> launched_and_waited(driver::Context& ctx, Result<driver::Fence> launched);

}  // namespace vgpu::testbed::workloads
