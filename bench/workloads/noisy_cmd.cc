// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench noisy: what a misbehaving VM costs another. Two fv-opt VMs;
// the victim (VM 1) launches small fills and waits for each, for --seconds;
// the neighbour (VM 0) meanwhile does one thing as fast as its thread can:
//   idle        nothing (the baseline)
//   cpu         spins on the CPU, touching no device (on a machine with
//               few cores, the share of the slowdown that is only CPU)
//   reset       PMC.ENABLE cleared and set again (a guest reset, in a loop)
//   doorbell    GP_PUT of its idle channel rewritten (no new work)
//   invalidate  MMU.INVALIDATE of every address space (ALL_PDB)
// Runs are interleaved (idle, then each storm, --runs times) on fresh
// testbeds; the table gives the victim's launches per second, its median
// ratio to idle, and how many operations the neighbour made.
//   noisy [--storms cpu,reset,doorbell,invalidate] [--seconds 2] [--runs 3] [--json FILE]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/testbed.h"

namespace vgpu::bench {
namespace {

namespace pf = regs::pfifo;
namespace pmc = regs::pmc;
namespace mmu = regs::mmu;
constexpr uint32_t FILL_FLOATS = 1024;

// What a neighbour operation needs: its port, and the GP_PUT doorbell of
// its open, idle channel with the value it holds.
struct Neighbour {
  driver::Port& port;
  uint64_t gp_put;
  uint32_t put_value;
};
using Storm = void (*)(const Neighbour& n);

const std::map<std::string, Storm, std::less<>>& storms() {
  static const std::map<std::string, Storm, std::less<>> table{
      {"idle", nullptr},
      {"cpu", [](const Neighbour&) {}},  // the loop around it is the work
      {"reset",
       [](const Neighbour& n) {
         n.port.write32(driver::Bar::bar0, pmc::ENABLE.offset, 0);
         n.port.write32(driver::Bar::bar0, pmc::ENABLE.offset, pmc::enable::ALL);
       }},
      {"doorbell", [](const Neighbour& n) { n.port.write32(driver::Bar::bar1, n.gp_put, n.put_value); }},
      {"invalidate",
       [](const Neighbour& n) {
         n.port.write32(driver::Bar::bar0, mmu::INVALIDATE.offset,
                        mmu::InvalidateTrigger::mask | mmu::InvalidatePageAll::mask | mmu::InvalidateAllPdb::mask);
       }},
  };
  return table;
}

struct Run {
  double launches_per_s = 0;
  uint64_t storm_ops = 0;
};

Result<Run> run_once(const std::string& storm, uint32_t seconds) {
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 64 * MiB;
  auto tb = testbed::Testbed::create(tc);
  if (!tb) return std::unexpected(tb.error());
  const Storm op = storms().at(storm);
  std::atomic<bool> victim_done{false};
  std::atomic<bool> neighbour_ready{false};
  Run run;
  auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    if (vm.index == 0) {
      auto ctx = vm.device.create_context();  // a channel of its own (doorbell storms ring it)
      if (!ctx) return std::unexpected(ctx.error());
      const uint32_t chid = (*ctx)->channel_id();
      const uint64_t userd = uint64_t{pf::UserdBaseAddr::get(vm.port.read32(driver::Bar::bar0, pf::USERD_BASE.offset))}
                             << pf::USERD_BASE_SHIFT;
      const uint64_t put = userd + uint64_t{chid} * regs::userd::SIZE + regs::userd::GP_PUT;
      const Neighbour n{vm.port, put, vm.port.read32(driver::Bar::bar1, put)};
      neighbour_ready = true;
      while (!victim_done.load(std::memory_order_relaxed)) {
        if (!op) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        op(n);
        ++run.storm_ops;
      }
      return {};
    }
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    auto buf = (*ctx)->alloc(FILL_FLOATS * sizeof(float));
    if (!buf) return std::unexpected(buf.error());
    while (!neighbour_ready.load()) std::this_thread::yield();
    uint64_t launches = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end) {
      auto f = (*ctx)->fill({*buf, FILL_FLOATS, 1.f});
      if (!f) {
        victim_done = true;
        return std::unexpected(f.error());
      }
      if (Status s = (*ctx)->wait(*f); !s) {
        victim_done = true;
        return s;
      }
      ++launches;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    victim_done = true;
    run.launches_per_s = static_cast<double>(launches) / s;
    return {};
  });
  for (auto& r : results)
    if (!r) return std::unexpected(r.error().context(storm));
  return run;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int noisy_main(std::span<char*> args) {
  std::vector<std::string> chosen{"cpu", "reset", "doorbell", "invalidate"};
  uint32_t seconds = 2, runs = 3;
  std::string json_path;
  if (Status s = parse_flags(args, {{"--storms", list_flag(chosen)},
                                    {"--seconds", count_flag("--seconds", seconds, 600)},
                                    {"--runs", count_flag("--runs", runs, 100)},
                                    {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "noisy: " << s.error().message << "\n";
    return 2;
  }
  for (const std::string& s : chosen)
    if (s == "idle" || !storms().contains(s)) {
      std::cerr << "noisy: unknown storm '" << s << "' (cpu, reset, doorbell, invalidate)\n";
      return 2;
    }
  std::map<std::string, std::vector<double>> rate;   // victim launches/s per storm, per run
  std::map<std::string, std::vector<double>> ratio;  // to the idle run of the same round
  std::map<std::string, std::vector<uint64_t>> ops;
  for (uint32_t r = 0; r < runs; ++r) {
    auto idle = run_once("idle", seconds);
    if (!idle) {
      std::cerr << "noisy: " << idle.error().what() << "\n";
      return 1;
    }
    rate["idle"].push_back(idle->launches_per_s);
    for (const std::string& s : chosen) {
      auto got = run_once(s, seconds);
      if (!got) {
        std::cerr << "noisy: " << got.error().what() << "\n";
        return 1;
      }
      rate[s].push_back(got->launches_per_s);
      ratio[s].push_back(got->launches_per_s / idle->launches_per_s);
      ops[s].push_back(got->storm_ops);
    }
  }
  std::printf(
      "victim: fill of %u floats, launch and wait, %u s per run; neighbour storms; %u interleaved runs, "
      "medians\n",
      FILL_FLOATS, seconds, runs);
  std::printf("%-11s | %14s | %14s | %16s\n", "neighbour", "victim ops/s", "ratio to idle", "neighbour ops/s");
  std::printf("%-11s | %14.0f | %14s | %16s\n", "idle", median(rate["idle"]), "1", "-");
  for (const std::string& s : chosen) {
    std::vector<double> per_s;
    for (uint64_t o : ops[s]) per_s.push_back(static_cast<double>(o) / seconds);
    std::printf("%-11s | %14.0f | %14.3f | %16.0f\n", s.c_str(), median(rate[s]), median(ratio[s]), median(per_s));
  }
  if (!json_path.empty()) {
    nlohmann::ordered_json j = {{"suite", "noisy"},
                                {"seconds", seconds},
                                {"runs", runs},
                                {"idle_ops_per_s", median(rate["idle"])},
                                {"storms", nlohmann::json::array()}};
    for (const std::string& s : chosen) {
      std::vector<double> per_s;
      for (uint64_t o : ops[s]) per_s.push_back(static_cast<double>(o) / seconds);
      j["storms"].push_back({{"storm", s},
                             {"victim_ops_per_s", median(rate[s])},
                             {"ratio", median(ratio[s])},
                             {"neighbour_ops_per_s", median(per_s)}});
    }
    if (!write_json_file("noisy", json_path, j)) return 1;
  }
  return 0;
}

}  // namespace vgpu::bench
