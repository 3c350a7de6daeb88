// SPDX-License-Identifier: GPL-2.0-or-later
// launch: the latency of one tiny kernel, launch to fence. A fill of one
// element is launched and waited for, one at a time, many times; the
// detail gives p50 and p99 of the per-launch latency. This is what the
// doorbell, the scheduler, the interrupt and the wake-up cost together.
#include <algorithm>
#include <chrono>

#include "common/text.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {
namespace {
constexpr uint32_t LAUNCHES = 10'000;
constexpr uint32_t REDUCED_LAUNCHES = 200;
constexpr uint32_t WARM_UP = 200;  // untimed: caches, shadows, the first GPFIFO wrap

double percentile_us(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))] * 1e6;
}
}  // namespace

// Timed: the run of `count` launch-and-wait pairs. Checked: every fence
// reached and the element holds the last value filled.
Result<WorkloadResult> launch(Vm& vm, const WorkloadOptions& o) {
  const uint32_t count = o.reduced ? REDUCED_LAUNCHES : LAUNCHES;
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  auto buf = c.alloc(sizeof(float));
  if (!buf) return std::unexpected(buf.error());
  const auto once = [&](float value) -> Status {
    auto f = c.fill({*buf, 1, value});
    if (!f) return std::unexpected(f.error());
    return c.wait(*f);
  };
  for (uint32_t i = 0; i < WARM_UP; ++i)
    if (auto st = once(-1.0f); !st) return std::unexpected(st.error());
  WorkloadResult r;
  std::vector<double> each;
  each.reserve(size_t{count} * o.runs);
  const Status timed = timed_runs(o, r, [&](uint32_t) -> Result<uint32_t> {
    for (uint32_t i = 0; i < count; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (auto st = once(static_cast<float>(i)); !st) return std::unexpected(st.error());
      each.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return count;
  });
  if (!timed) return std::unexpected(timed.error());
  float last = 0;
  if (auto st = c.download(*buf, std::span(&last, 1)); !st) return std::unexpected(st.error());
  r.correct = last == static_cast<float>(count - 1);
  const uint64_t shape[1] = {count};
  r.checksum = hash_of(std::span<const uint64_t>(shape));
  r.work_per_run = count;
  r.work_unit = "kernel";
  r.launch_p50_us = percentile_us(each, 0.50);
  r.detail = strfmt("%u launches of a 1-element fill, each waited: p50 %.1f us, p99 %.1f us; %s", count,
                    *r.launch_p50_us, percentile_us(each, 0.99),
                    r.correct ? "last value present" : "LAST VALUE MISSING");
  return r;
}

}  // namespace vgpu::testbed::workloads
