// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench hostwork: how long one VM's host work keeps another VM
// waiting (issue 37 item 5). VM 0 floods its shadow budget (every page-
// directory entry past its ring's names one small-page table: millions of
// entries for the lazy sync before its next launch) while VM 1 runs small
// fills (tests/testing/shadow_flood.h). Per turn-ms: VM 1's worst fill,
// its fills meanwhile, VM 0's launch and the turns that ended at their
// bound in the sync. turn-ms 0 (unbounded turns) leaves the sync whole:
// the behaviour before it ran in pieces. --modes: fv-opt (the lazy sync,
// in pieces at the VM's dispatch; the default) and fv-naive (the full
// sync at the guest's sync points, on its own thread).
//   hostwork [--runs N] [--turn-ms LIST] [--modes LIST] [--json FILE]
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "tests/testing/shadow_flood.h"

namespace vgpu::bench {
namespace {

constexpr uint64_t NS_PER_MS = 1'000'000;

struct HostWorkEntry {
  testbed::Mode mode = testbed::Mode::fv_opt;
  uint32_t turn_ms = 0;
  uint32_t run = 0;
  mediator::attack::FloodResult r;
};

double ms(uint64_t ns) { return static_cast<double>(ns) / static_cast<double>(NS_PER_MS); }

void usage() {
  std::cerr << "usage: vgpu-bench hostwork [--runs N] [--turn-ms LIST] [--modes fv-opt,fv-naive] [--json FILE]\n";
}

void print_table(const std::vector<HostWorkEntry>& entries) {
  std::printf("\n%-8s %8s %4s %14s %22s %8s %12s %14s %12s\n", "mode", "turn-ms", "run", "worst wait ms",
              "launch/wait ms, turns", "fills", "flood ms", "host-work turns", "entries");
  for (const auto& e : entries) {
    const auto& w = e.r.worst;
    std::printf("%-8s %8u %4u %14.1f %8.1f/%5.1f, %2llu/%2llu %8u %12.1f %14llu %12llu\n", testbed::mode_name(e.mode),
                e.turn_ms, e.run, ms(e.r.worst_wait_ns), ms(w.launch_ns), ms(w.wait_ns),
                static_cast<unsigned long long>(w.turns_started), static_cast<unsigned long long>(w.host_work_turns),
                e.r.fills, ms(e.r.flood_ns), static_cast<unsigned long long>(e.r.turns.host_work),
                static_cast<unsigned long long>(e.r.entries_scanned));
  }
  std::printf(
      "\nworst wait: VM 1's slowest one-entry fill (launch to fence) while VM 0's flooded launch ran;\n"
      "the documented bound is turn-ms + one slice (turn-ms/4) + 10 ms (docs/scheduler.md);\n"
      "launch/wait: that fill's driver call (its doorbell included) and its fence wait; turns: the host's\n"
      "turns that started during it / of those, the ones that ended at their bound in a VM's sync\n");
}

bool write_json(const std::string& path, const std::vector<HostWorkEntry>& entries) {
  nlohmann::ordered_json j = {{"suite", "hostwork"}, {"results", nlohmann::json::array()}};
  for (const auto& e : entries)
    j["results"].push_back({{"mode", testbed::mode_name(e.mode)},
                            {"turn_ms", e.turn_ms},
                            {"run", e.run},
                            {"worst_wait_ms", ms(e.r.worst_wait_ns)},
                            {"worst_launch_ms", ms(e.r.worst.launch_ns)},
                            {"worst_fence_wait_ms", ms(e.r.worst.wait_ns)},
                            {"worst_turns_started", e.r.worst.turns_started},
                            {"worst_host_work_turns", e.r.worst.host_work_turns},
                            {"fills", e.r.fills},
                            {"flood_ms", ms(e.r.flood_ns)},
                            {"host_work_turns", e.r.turns.host_work},
                            {"entries_scanned", e.r.entries_scanned}});
  return write_json_file("hostwork", path, j);
}

}  // namespace

int hostwork_main(std::span<char*> args) {
  uint32_t runs = 3;
  std::vector<uint32_t> turns{VGPU_OPT_TURN_MS_DEFAULT, 0};
  std::vector<testbed::Mode> modes{testbed::Mode::fv_opt};
  std::string json_path;
  if (Status s = parse_flags(args, {{"--runs", count_flag("--runs", runs, 100)},
                                    {"--modes", parsed_flag(modes, parse_modes)},
                                    {"--turn-ms", parsed_flag(turns,
                                                              [](std::string_view v) {
                                                                return parse_counts("--turn-ms", v,
                                                                                    VGPU_OPT_TURN_MS_MAX, 0);
                                                              })},
                                    {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "vgpu-bench hostwork: " << s.error().message << "\n";
    usage();
    return 2;
  }
  for (testbed::Mode m : modes) {
    if (m == testbed::Mode::fv_opt || m == testbed::Mode::fv_naive) continue;
    std::cerr << "vgpu-bench hostwork: --modes " << testbed::mode_name(m)
              << ": the flood needs shadowed guest page tables (fv-opt or fv-naive)\n";
    usage();
    return 2;
  }
  std::vector<HostWorkEntry> entries;
  for (testbed::Mode mode : modes) {
    for (uint32_t turn_ms : turns) {
      for (uint32_t run = 0; run < runs; ++run) {
        testbed::TestbedConfig tc;  // the defaults but turn-ms
        tc.mode = mode;
        tc.vms = 2;
        tc.vram_per_vm = 128 * MiB;
        tc.turn_ns = uint64_t{turn_ms} * NS_PER_MS;
        std::fprintf(stderr, "  %s, turn-ms %u, run %u ...\n", testbed::mode_name(mode), turn_ms, run);
        auto r = mediator::attack::shadow_flood(tc);
        if (!r) {
          std::cerr << "vgpu-bench hostwork: " << r.error().what() << "\n";
          return 1;
        }
        entries.push_back({mode, turn_ms, run, *r});
      }
    }
  }
  print_table(entries);
  if (!json_path.empty() && !write_json(json_path, entries)) return 1;
  return 0;
}

}  // namespace vgpu::bench
