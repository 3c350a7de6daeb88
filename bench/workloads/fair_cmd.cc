// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench fair: the scheduler in real time, through the whole stack.
// Two fv-opt VMs run the unchanged driver; VM0 issues spin kernels of
// --short-ms, VM1 of --long-ms, each waiting for one before the next, for
// --seconds of wall time, once per policy. GPU time per VM comes from the
// dispatcher's accounting (engine start/end timestamps of each
// submission). The virtual-time experiments of bench/sched isolate the
// policies; this shows what they do with a real driver, real traps and
// real thread wake-ups between a completion and the next submission.
// Long kernels (issue 14): --long-ms takes a list, --weights W0:W1 sets the
// shares, and --slice-blocks a list of slice sizes (0: unsliced) for both
// VMs (a spin is one thread block per 100 us: 10 blocks = 1 ms slices).
//   fair [--policies fifo,credit,band] [--short-ms 1] [--long-ms 10[,30,...]]
//        [--weights 1:1] [--slice-blocks 0[,10,...]] [--seconds 3] [--json FILE]
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/testbed.h"
#include "vgpu/options.h"

namespace vgpu::bench {
namespace {

struct FairEntry {
  std::string policy;
  uint32_t long_ms = 0;
  uint32_t slice_blocks = 0;
  double gpu_ms[2] = {0, 0};
  uint64_t kernels[2] = {0, 0};
  uint64_t slice_resumes[2] = {0, 0};
  bool ok = true;
  std::string error;
  double share(int vm) const { return gpu_ms[vm] / (gpu_ms[0] + gpu_ms[1]); }
};

struct FairRun {
  std::string policy;
  uint32_t short_ms, long_ms;
  uint32_t weights[2];
  uint32_t slice_blocks;
  uint32_t seconds;
};

FairEntry measure(const FairRun& r) {
  FairEntry e{r.policy, r.long_ms, r.slice_blocks};
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 64 * MiB;
  tc.scheduler = r.policy;
  tc.weights = {r.weights[0], r.weights[1]};
  tc.slice_blocks = {r.slice_blocks, r.slice_blocks};
  auto tb = testbed::Testbed::create(tc);
  if (!tb) {
    e.ok = false;
    e.error = tb.error().what();
    return e;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(r.seconds);
  auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    const uint64_t ns = uint64_t{vm.index == 0 ? r.short_ms : r.long_ms} * 1'000'000;
    while (std::chrono::steady_clock::now() < end) {
      auto f = (*ctx)->spin({ns});
      if (!f) return std::unexpected(f.error());
      if (Status s = (*ctx)->wait(*f); !s) return s;
      ++e.kernels[vm.index];
    }
    return {};
  });
  for (uint32_t vm = 0; vm < 2; ++vm) {
    if (!results[vm]) {
      e.ok = false;
      e.error = results[vm].error().what();
    }
    e.gpu_ms[vm] = static_cast<double>((*tb)->host()->gpu_ns((*tb)->vgpu(vm)->id())) / 1e6;
    e.slice_resumes[vm] = (*tb)->vgpu(vm)->counters().slice_resumes;
  }
  return e;
}

// W0:W1, each a scheduler weight.
Status parse_weights(std::string_view v, uint32_t (&w)[2]) {
  const size_t colon = v.find(':');
  if (colon == std::string_view::npos)
    return fail(Errc::invalid_argument, strfmt("--weights: W0:W1, not '%.*s'", static_cast<int>(v.size()), v.data()));
  auto w0 = parse_count("--weights", v.substr(0, colon), VGPU_OPT_WEIGHT_MAX);
  if (!w0) return std::unexpected(w0.error());
  auto w1 = parse_count("--weights", v.substr(colon + 1), VGPU_OPT_WEIGHT_MAX);
  if (!w1) return std::unexpected(w1.error());
  w[0] = *w0;
  w[1] = *w1;
  return {};
}

}  // namespace

int fair_main(std::span<char*> args) {
  std::vector<std::string> policies{"fifo", "credit", "band"};
  std::vector<uint32_t> longs{10}, slices{0};
  uint32_t short_ms = 1, seconds = 3;
  uint32_t weights[2] = {1, 1};
  std::string json_path;
  if (Status s = parse_flags(
          args,
          {{"--policies", list_flag(policies)},
           {"--short-ms", count_flag("--short-ms", short_ms, 1000)},
           {"--long-ms", parsed_flag(longs, [](std::string_view v) { return parse_counts("--long-ms", v, 1000); })},
           {"--weights", [&weights](std::string_view v) { return parse_weights(v, weights); }},
           {"--slice-blocks", parsed_flag(slices,
                                          [](std::string_view v) {
                                            return parse_counts("--slice-blocks", v, VGPU_OPT_SLICE_BLOCKS_MAX, 0);
                                          })},
           {"--seconds", count_flag("--seconds", seconds, 600)},
           {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "fair: " << s.error().message << "\n";
    return 2;
  }
  const double target0 = static_cast<double>(weights[0]) / (weights[0] + weights[1]);
  std::vector<FairEntry> entries;
  std::printf(
      "two fv-opt VMs, spin kernels %u ms (vm0) and the long ms below (vm1), weights %u:%u (vm0 target %.3f), "
      "%u s each; slice 0 = unsliced (a spin block is 100 us)\n",
      short_ms, weights[0], weights[1], target0, seconds);
  std::printf("%-7s %8s %6s | %12s %12s | %8s %8s %8s | %-13s | %s\n", "policy", "long ms", "slice", "vm0 GPU ms",
              "vm1 GPU ms", "share0", "share1", "|d|", "kernels", "slice resumes");
  for (uint32_t long_ms : longs) {
    for (uint32_t slice : slices) {
      for (const std::string& p : policies) {
        FairEntry e = measure({p, short_ms, long_ms, {weights[0], weights[1]}, slice, seconds});
        if (!e.ok) {
          std::cerr << "fair: " << p << ": " << e.error << "\n";
          return 1;
        }
        std::printf("%-7s %8u %6u | %12.1f %12.1f | %8.3f %8.3f %8.3f | %5lu / %-5lu | %lu / %lu\n", p.c_str(), long_ms,
                    slice, e.gpu_ms[0], e.gpu_ms[1], e.share(0), e.share(1), std::abs(e.share(0) - target0),
                    e.kernels[0], e.kernels[1], e.slice_resumes[0], e.slice_resumes[1]);
        std::fflush(stdout);
        entries.push_back(e);
      }
    }
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "{\"suite\": \"fair\", \"short_ms\": " << short_ms << ", \"weights\": [" << weights[0] << ", " << weights[1]
        << "], \"seconds\": " << seconds << ", \"results\": [";
    for (size_t i = 0; i < entries.size(); ++i) {
      const FairEntry& e = entries[i];
      out << (i ? ", " : "")
          << strfmt(
                 "{\"policy\": %s, \"long_ms\": %u, \"slice_blocks\": %u, \"distance\": %.4f, \"vms\": [{\"vm\": 0, "
                 "\"kernel_ms\": %u, \"gpu_ms\": %.3f, \"share\": %.4f, \"target\": %.4f, \"kernels\": %lu, "
                 "\"slice_resumes\": %lu}, {\"vm\": 1, \"kernel_ms\": %u, \"gpu_ms\": %.3f, \"share\": %.4f, "
                 "\"target\": %.4f, \"kernels\": %lu, \"slice_resumes\": %lu}]}",
                 json_string(e.policy).c_str(), e.long_ms, e.slice_blocks, std::abs(e.share(0) - target0), short_ms,
                 e.gpu_ms[0], e.share(0), target0, e.kernels[0], e.slice_resumes[0], e.long_ms, e.gpu_ms[1], e.share(1),
                 1 - target0, e.kernels[1], e.slice_resumes[1]);
    }
    out << "]}\n";
    std::printf("JSON: %s\n", json_path.c_str());
  }
  return 0;
}

}  // namespace vgpu::bench
