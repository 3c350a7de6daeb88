// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench idle: what a VM costs while it waits. Every VM submits one
// long spin kernel and waits for its fence; the CPU time its thread used
// during the wait (CLOCK_THREAD_CPUTIME_ID) is set against the wait's
// wall time, for interrupt waits and for polling side by side. Before it,
// each VM launches and waits for --short N one-element fills, so the long
// wait comes after quick ones (when a wait may spin first, DeviceOptions::
// wait_spin_ns).
//   idle [--vms N] [--modes native,fv-opt] [--spin-ms N] [--short N] [--json FILE]
// With the FIFO scheduler the VMs' kernels run one after another, so the
// later VMs wait longest, mostly for the others' work.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"

namespace vgpu::bench {
namespace {

using testbed::Mode;

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct IdleEntry {
  Mode mode;
  bool interrupts;
  uint32_t vms;
  double wait_s = 0, cpu_s = 0;  // summed over the VMs
  bool ok = true;
};

Result<IdleEntry> measure(Mode mode, bool interrupts, uint32_t vms, uint64_t spin_ns, uint32_t short_launches) {
  testbed::TestbedConfig tc;
  tc.mode = mode;
  tc.vms = vms;
  tc.vram_per_vm = 64 * MiB;
  tc.device.channel.use_interrupts = interrupts;
  auto tb = testbed::Testbed::create(tc);
  if (!tb) return std::unexpected(tb.error());
  std::vector<double> wait_s(vms), cpu_s(vms);
  const auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    if (short_launches) {
      auto buf = (*ctx)->alloc(sizeof(float));
      if (!buf) return std::unexpected(buf.error());
      for (uint32_t i = 0; i < short_launches; ++i) {
        auto quick = (*ctx)->fill({*buf, 1, 1.0f});
        if (!quick) return std::unexpected(quick.error());
        if (Status st = (*ctx)->wait(*quick); !st) return st;
      }
    }
    auto f = (*ctx)->spin({spin_ns});
    if (!f) return std::unexpected(f.error());
    const double cpu0 = thread_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = (*ctx)->wait(*f);
    wait_s[vm.index] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu_s[vm.index] = thread_cpu_s() - cpu0;
    return st;
  });
  IdleEntry e{mode, interrupts, vms};
  for (uint32_t i = 0; i < vms; ++i) {
    if (!results[i]) return std::unexpected(results[i].error());
    e.wait_s += wait_s[i];
    e.cpu_s += cpu_s[i];
  }
  return e;
}

void usage() {
  std::cerr << "usage: vgpu-bench idle [--vms N] [--modes native,fv-opt] [--spin-ms N] [--short N] [--json FILE]\n";
}

}  // namespace

int idle_main(std::span<char*> args) {
  uint32_t vms = 4, spin_ms = 500, short_launches = 100;
  std::vector<Mode> modes{Mode::native, Mode::fv_opt};
  std::string json_path;
  if (Status s = parse_flags(args, {{"--vms", count_flag("--vms", vms, 64)},
                                    {"--modes", parsed_flag(modes, parse_modes)},
                                    {"--spin-ms", count_flag("--spin-ms", spin_ms, 60'000)},
                                    {"--short", count_flag("--short", short_launches, 1'000'000, 0)},
                                    {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "vgpu-bench idle: " << s.error().message << "\n";
    usage();
    return 2;
  }
  std::vector<IdleEntry> entries;
  for (Mode mode : modes) {
    for (bool interrupts : {true, false}) {
      const uint32_t n = mode == Mode::native ? 1 : vms;
      std::fprintf(stderr, "  %-8s %-4s %u VMs ...\n", mode_name(mode), interrupts ? "irq" : "poll", n);
      auto e = measure(mode, interrupts, n, uint64_t{spin_ms} * 1'000'000, short_launches);
      if (!e) {
        std::cerr << "vgpu-bench idle: " << e.error().what() << "\n";
        return 1;
      }
      entries.push_back(*e);
    }
  }
  std::printf("\n%-8s %-5s %4s %12s %12s %10s\n", "mode", "wait", "vms", "waited s", "cpu s", "cpu/wait");
  for (const auto& e : entries)
    std::printf("%-8s %-5s %4u %12.3f %12.4f %9.2f%%\n", mode_name(e.mode), e.interrupts ? "irq" : "poll", e.vms,
                e.wait_s, e.cpu_s, e.wait_s > 0 ? 100.0 * e.cpu_s / e.wait_s : 0.0);
  std::printf(
      "\nwaited / cpu: summed over the VMs' threads, fence wait only (one %u ms spin kernel per VM, after %u "
      "waited one-element fills)\n",
      spin_ms, short_launches);
  if (!json_path.empty()) {
    nlohmann::ordered_json j = {{"suite", "idle"},
                                {"spin_ms", spin_ms},
                                {"short", short_launches},
                                {"results", nlohmann::json::array()}};
    for (const auto& e : entries)
      j["results"].push_back({{"mode", mode_name(e.mode)},
                              {"wait", e.interrupts ? "irq" : "poll"},
                              {"vms", e.vms},
                              {"waited_s", e.wait_s},
                              {"cpu_s", e.cpu_s}});
    if (!write_json_file("idle", json_path, j)) return 1;
  }
  return 0;
}

}  // namespace vgpu::bench
