// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench sliver: SliVER's experiment on our stack (issue 14). Two
// fv-opt VMs co-run SGEMM (VM0) and MRI-Q (VM1), each launching its kernel
// --iterations times back to back (each waited), with kernel slicing of
// each VM set independently (slice-blocks; 0: unsliced). The table is the
// co-run's total time (both VMs done) and each VM's own time, for every
// pair of slice sizes. A second table is the latency of a VM launching a
// tiny kernel (a 1-element fill, waited) beside a VM running the SGEMM
// loop, unsliced and sliced.
//   sliver [--sgemm-n 512] [--mriq-k 2048] [--mriq-x 16384] [--iterations 4]
//          [--slices 0,4,16,64,256] [--latency-seconds 3] [--policy band] [--turn-ms 30] [--json FILE]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/testbed.h"
#include "vgpu/options.h"

namespace vgpu::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Shape {
  uint32_t sgemm_n, mriq_k, mriq_x, iterations;
  std::string policy;
  uint32_t turn_ms;
};

// VM0's SGEMM loop: n x n x n, `iterations` launches (0: until `stop`).
Status sgemm_loop(driver::Context& ctx, uint32_t n, uint32_t iterations, const std::atomic<bool>& stop) {
  const uint64_t bytes = uint64_t{n} * n * sizeof(float);
  auto a = ctx.alloc(bytes), b = ctx.alloc(bytes), c = ctx.alloc(bytes);
  if (!a || !b || !c) return fail(Errc::out_of_memory, "sliver: sgemm buffers");
  std::vector<float> host(uint64_t{n} * n);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 7) * 0.125f;
  if (Status s = ctx.upload(*a, std::span<const float>(host)); !s) return s;
  if (Status s = ctx.upload(*b, std::span<const float>(host)); !s) return s;
  for (uint32_t i = 0; iterations == 0 ? !stop.load() : i < iterations; ++i) {
    auto f = ctx.sgemm({*a, *b, *c, n, n, n, 1.f, 0.f});
    if (!f) return std::unexpected(f.error());
    if (Status s = ctx.wait(*f); !s) return s;
  }
  return {};
}

// VM1's MRI-Q loop.
Status mriq_loop(driver::Context& ctx, uint32_t num_k, uint32_t num_x, uint32_t iterations) {
  const uint64_t kb = uint64_t{num_k} * sizeof(float), xb = uint64_t{num_x} * sizeof(float);
  std::vector<driver::Buffer> bufs;
  for (uint64_t bytes : {kb, kb, kb, kb, xb, xb, xb, xb, xb}) {
    auto buf = ctx.alloc(bytes);
    if (!buf) return std::unexpected(buf.error());
    bufs.push_back(*buf);
  }
  std::vector<float> k(num_k, 0.25f), x(num_x, 0.5f);
  for (int i = 0; i < 4; ++i)
    if (Status s = ctx.upload(bufs[static_cast<size_t>(i)], std::span<const float>(k)); !s) return s;
  for (int i = 4; i < 7; ++i)
    if (Status s = ctx.upload(bufs[static_cast<size_t>(i)], std::span<const float>(x)); !s) return s;
  for (uint32_t i = 0; i < iterations; ++i) {
    auto f = ctx.mriq({bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], bufs[7], bufs[8], num_k, num_x});
    if (!f) return std::unexpected(f.error());
    if (Status s = ctx.wait(*f); !s) return s;
  }
  return {};
}

Result<std::unique_ptr<testbed::Testbed>> two_vms(const Shape& shape, uint32_t slice0, uint32_t slice1) {
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 256 * MiB;
  tc.scheduler = shape.policy;
  tc.slice_blocks = {slice0, slice1};
  tc.turn_ns = uint64_t{shape.turn_ms} * 1'000'000;
  return testbed::Testbed::create(tc);
}

struct CoRun {
  uint32_t sgemm_slice, mriq_slice;
  double total_ms = 0, sgemm_ms = 0, mriq_ms = 0;
  uint64_t resumes[2] = {0, 0};
};

Result<CoRun> co_run(const Shape& shape, uint32_t sgemm_slice, uint32_t mriq_slice) {
  auto tb = two_vms(shape, sgemm_slice, mriq_slice);
  if (!tb) return std::unexpected(tb.error());
  CoRun r{sgemm_slice, mriq_slice};
  std::atomic<bool> stop = false;
  std::atomic<int> ready = 0;
  Clock::time_point t0;
  std::atomic<bool> go = false;
  auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    // Both VMs' kernels start together: buffers first, then a barrier.
    ++ready;
    while (ready.load() < 2) std::this_thread::yield();
    if (vm.index == 0) {
      t0 = Clock::now();
      go = true;
    }
    while (!go.load()) std::this_thread::yield();
    Status s = vm.index == 0 ? sgemm_loop(**ctx, shape.sgemm_n, shape.iterations, stop)
                             : mriq_loop(**ctx, shape.mriq_k, shape.mriq_x, shape.iterations);
    (vm.index == 0 ? r.sgemm_ms : r.mriq_ms) = ms_since(t0);
    return s;
  });
  for (uint32_t vm = 0; vm < 2; ++vm) {
    if (!results[vm]) return std::unexpected(results[vm].error());
    r.resumes[vm] = (*tb)->vgpu(vm)->counters().slice_resumes;
  }
  r.total_ms = std::max(r.sgemm_ms, r.mriq_ms);
  return r;
}

struct Latency {
  uint32_t slice;
  double p50_us = 0, p99_us = 0, max_us = 0;
  uint64_t launches = 0;
};

// VM1 loops SGEMM (sliced by `slice`) while VM0 launches and waits tiny fills.
Result<Latency> latency_beside(const Shape& shape, uint32_t slice, uint32_t seconds) {
  auto tb = two_vms(shape, 0, slice);
  if (!tb) return std::unexpected(tb.error());
  Latency l{slice};
  std::vector<double> us;
  std::atomic<bool> stop = false, long_running = false;
  auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    if (vm.index == 1) {
      long_running = true;
      return sgemm_loop(**ctx, shape.sgemm_n, 0, stop);
    }
    auto buf = (*ctx)->alloc(sizeof(float));
    if (!buf) return std::unexpected(buf.error());
    while (!long_running.load()) std::this_thread::yield();
    const auto end = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < end) {
      const auto t = Clock::now();
      auto f = (*ctx)->fill({*buf, 1, 1.f});
      if (!f) return std::unexpected(f.error());
      if (Status s = (*ctx)->wait(*f); !s) return s;
      us.push_back(ms_since(t) * 1000.0);
    }
    stop = true;
    return {};
  });
  for (const auto& r : results)
    if (!r) return std::unexpected(r.error());
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    l.p50_us = us[us.size() / 2];
    l.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
    l.max_us = us.back();
  }
  l.launches = us.size();
  return l;
}

bool write_json(const std::string& path, const Shape& shape, const std::vector<CoRun>& runs,
                const std::vector<Latency>& lats) {
  const uint32_t sgemm_blocks = ((shape.sgemm_n + 15) / 16) * ((shape.sgemm_n + 15) / 16);
  const uint32_t mriq_blocks = (shape.mriq_x + 255) / 256;
  nlohmann::ordered_json j = {{"suite", "sliver"},
                              {"policy", shape.policy},
                              {"turn_ms", shape.turn_ms},
                              {"sgemm_n", shape.sgemm_n},
                              {"sgemm_blocks", sgemm_blocks},
                              {"mriq_k", shape.mriq_k},
                              {"mriq_x", shape.mriq_x},
                              {"mriq_blocks", mriq_blocks},
                              {"iterations", shape.iterations},
                              {"co_runs", nlohmann::json::array()},
                              {"latency", nlohmann::json::array()}};
  for (const CoRun& r : runs)
    j["co_runs"].push_back({{"sgemm_slice", r.sgemm_slice},
                            {"mriq_slice", r.mriq_slice},
                            {"total_ms", r.total_ms},
                            {"sgemm_ms", r.sgemm_ms},
                            {"mriq_ms", r.mriq_ms},
                            {"slice_resumes", {r.resumes[0], r.resumes[1]}}});
  for (const Latency& l : lats)
    j["latency"].push_back({{"sgemm_slice", l.slice},
                            {"p50_us", l.p50_us},
                            {"p99_us", l.p99_us},
                            {"max_us", l.max_us},
                            {"launches", l.launches}});
  return write_json_file("sliver", path, j);
}

}  // namespace

int sliver_main(std::span<char*> args) {
  Shape shape{512, 2048, 16384, 4, "band", VGPU_OPT_TURN_MS_DEFAULT};
  uint32_t latency_seconds = 3;
  std::vector<uint32_t> slices{0, 4, 16, 64, 256};
  std::string json_path;
  if (Status s = parse_flags(
          args, {{"--sgemm-n", count_flag("--sgemm-n", shape.sgemm_n, 4096)},
                 {"--mriq-k", count_flag("--mriq-k", shape.mriq_k, 1 << 20)},
                 {"--mriq-x", count_flag("--mriq-x", shape.mriq_x, 1 << 24)},
                 {"--iterations", count_flag("--iterations", shape.iterations, 1000)},
                 {"--slices",
                  parsed_flag(slices, [](std::string_view v) { return parse_option_list(VGPU_OPT_SLICE_BLOCKS, v); })},
                 {"--latency-seconds", count_flag("--latency-seconds", latency_seconds, 600)},
                 {"--policy", text_flag(shape.policy)},
                 {"--turn-ms", option_flag(VGPU_OPT_TURN_MS, shape.turn_ms)},
                 {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "sliver: " << s.error().message << "\n";
    return 2;
  }
  const uint32_t sgemm_blocks = ((shape.sgemm_n + 15) / 16) * ((shape.sgemm_n + 15) / 16);
  const uint32_t mriq_blocks = (shape.mriq_x + 255) / 256;
  std::printf(
      "SliVER co-run, two fv-opt VMs (%s, turn %u ms): VM0 SGEMM %u^3 (%u blocks), VM1 MRI-Q k=%u x=%u (%u blocks), %u "
      "launches each; slice = thread blocks per slice, 0 = unsliced\n",
      shape.policy.c_str(), shape.turn_ms, shape.sgemm_n, sgemm_blocks, shape.mriq_k, shape.mriq_x, mriq_blocks,
      shape.iterations);
  std::printf("%11s %11s | %10s %10s %10s | %s\n", "sgemm slice", "mriq slice", "total ms", "sgemm ms", "mriq ms",
              "slice resumes");
  std::vector<CoRun> runs;
  for (uint32_t s0 : slices) {
    for (uint32_t s1 : slices) {
      auto r = co_run(shape, s0, s1);
      if (!r) {
        std::cerr << "sliver: " << r.error().what() << "\n";
        return 1;
      }
      std::printf("%11u %11u | %10.1f %10.1f %10.1f | %lu / %lu\n", s0, s1, r->total_ms, r->sgemm_ms, r->mriq_ms,
                  r->resumes[0], r->resumes[1]);
      std::fflush(stdout);
      runs.push_back(*r);
    }
  }
  const auto unsliced = std::ranges::find_if(runs,
                                             [](const CoRun& r) { return r.sgemm_slice == 0 && r.mriq_slice == 0; });
  const auto [best, worst] = std::ranges::minmax_element(runs, {}, &CoRun::total_ms);
  std::printf("best: sgemm slice %u, mriq slice %u, %.1f ms; worst: sgemm slice %u, mriq slice %u, %.1f ms",
              best->sgemm_slice, best->mriq_slice, best->total_ms, worst->sgemm_slice, worst->mriq_slice,
              worst->total_ms);
  if (unsliced != runs.end()) std::printf("; unsliced %.1f ms", unsliced->total_ms);
  std::printf("\n\nlatency of VM0's 1-element fill (launch to fence) beside VM1's SGEMM %u^3 loop, %u s each\n",
              shape.sgemm_n, latency_seconds);
  std::printf("%11s | %10s %10s %10s | %s\n", "sgemm slice", "p50 us", "p99 us", "max us", "launches");
  std::vector<Latency> lats;
  for (uint32_t s : slices) {
    auto l = latency_beside(shape, s, latency_seconds);
    if (!l) {
      std::cerr << "sliver: " << l.error().what() << "\n";
      return 1;
    }
    std::printf("%11u | %10.1f %10.1f %10.1f | %lu\n", s, l->p50_us, l->p99_us, l->max_us, l->launches);
    std::fflush(stdout);
    lats.push_back(*l);
  }
  if (!json_path.empty() && !write_json(json_path, shape, runs, lats)) return 1;
  return 0;
}

}  // namespace vgpu::bench
