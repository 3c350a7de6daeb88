// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench fair: the scheduler in real time, through the whole stack.
// Two fv-opt VMs run the unchanged driver; VM0 issues spin kernels of
// --short-ms, VM1 of --long-ms, each waiting for one before the next, for
// --seconds of wall time, once per policy. GPU time per VM comes from the
// dispatcher's accounting (engine start/end timestamps of each
// submission). The virtual-time experiments of bench/sched isolate the
// policies; this shows what they do with a real driver, real traps and
// real thread wake-ups between a completion and the next submission.
//   fair [--policies fifo,credit,band] [--short-ms 1] [--long-ms 10]
//        [--seconds 3] [--json FILE]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/testbed.h"

namespace vgpu::bench {
namespace {

struct FairEntry {
  std::string policy;
  double gpu_ms[2] = {0, 0};
  uint64_t kernels[2] = {0, 0};
  bool ok = true;
  std::string error;
  double share(int vm) const { return gpu_ms[vm] / (gpu_ms[0] + gpu_ms[1]); }
};

FairEntry measure(const std::string& policy, uint32_t short_ms, uint32_t long_ms, uint32_t seconds) {
  FairEntry e{policy};
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 64 * MiB;
  tc.scheduler = policy;
  auto tb = testbed::Testbed::create(tc);
  if (!tb) return FairEntry{policy, {0, 0}, {0, 0}, false, tb.error().what()};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    const uint64_t ns = uint64_t{vm.index == 0 ? short_ms : long_ms} * 1'000'000;
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
  }
  return e;
}

}  // namespace

int fair_main(std::span<char*> args) {
  std::vector<std::string> policies{"fifo", "credit", "band"};
  uint32_t short_ms = 1, long_ms = 10, seconds = 3;
  std::string json_path;
  if (Status s = parse_flags(args, {{"--policies", list_flag(policies)},
                                    {"--short-ms", count_flag("--short-ms", short_ms, 1000)},
                                    {"--long-ms", count_flag("--long-ms", long_ms, 1000)},
                                    {"--seconds", count_flag("--seconds", seconds, 600)},
                                    {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "fair: " << s.error().message << "\n";
    return 2;
  }
  std::vector<FairEntry> entries;
  std::printf("two fv-opt VMs, spin kernels %u ms (vm0) and %u ms (vm1), equal weights, %u s each\n", short_ms, long_ms,
              seconds);
  std::printf("%-7s | %12s %12s | %8s %8s | %s\n", "policy", "vm0 GPU ms", "vm1 GPU ms", "share0", "share1", "kernels");
  for (const std::string& p : policies) {
    FairEntry e = measure(p, short_ms, long_ms, seconds);
    if (!e.ok) {
      std::cerr << "fair: " << p << ": " << e.error << "\n";
      return 1;
    }
    std::printf("%-7s | %12.1f %12.1f | %8.3f %8.3f | %lu / %lu\n", p.c_str(), e.gpu_ms[0], e.gpu_ms[1], e.share(0),
                e.share(1), e.kernels[0], e.kernels[1]);
    entries.push_back(e);
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "{\"suite\": \"fair\", \"short_ms\": " << short_ms << ", \"long_ms\": " << long_ms
        << ", \"seconds\": " << seconds << ", \"results\": [";
    for (size_t i = 0; i < entries.size(); ++i) {
      const FairEntry& e = entries[i];
      out << (i ? ", " : "")
          << strfmt(
                 "{\"policy\": %s, \"vms\": [{\"vm\": 0, \"kernel_ms\": %u, \"gpu_ms\": %.3f, \"share\": %.4f, "
                 "\"kernels\": %lu}, {\"vm\": 1, \"kernel_ms\": %u, \"gpu_ms\": %.3f, \"share\": %.4f, \"kernels\": %lu}]}",
                 json_string(e.policy).c_str(), short_ms, e.gpu_ms[0], e.share(0), e.kernels[0], long_ms, e.gpu_ms[1],
                 e.share(1), e.kernels[1]);
    }
    out << "]}\n";
    std::printf("JSON: %s\n", json_path.c_str());
  }
  return 0;
}

}  // namespace vgpu::bench
