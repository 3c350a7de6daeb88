// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench scale: N VMs at once per mode, each running a throughput
// workload for a fixed number of runs.
//   scale [--vms 1,2,4,8] [--modes fv-naive,fv-opt] [--workloads gemm2,MMUL]
//         [--runs N] [--scheduler fifo|credit|band] [--json FILE]
//         [--wait irq|poll] [--wait-spin-us N] [--align-start yes|no]
// --align-start yes: every VM's first timed launch waits for the others'
// (a barrier), so that no VM's untimed set-up overlaps another's timing.
// Aggregate throughput = VMs x runs / (last VM's last fence - first VM's
// first launch); ratio_to_native is over one native VM's throughput
// measured the same way (native runs at 1 VM only).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/workloads/run.h"

namespace vgpu::bench {
namespace {

using testbed::Mode;
using namespace testbed::workloads;

struct ScaleEntry {
  const WorkloadSpec* spec;
  Mode mode;
  uint32_t vms, runs;
  double window_s = 0, per_s = 0, ratio = 0;
  bool correct = true;
  uint64_t trapped = 0, submissions = 0;
};

// Every point (the native baseline and each mode at each VM count) is
// the median of this many fresh measurements: one alone varies by a
// factor of two on a loaded machine, and the baseline and the points it
// divides must be estimated alike.
constexpr uint32_t REPEATS = 3;

struct ScaleSetup {
  uint32_t runs = 20;
  std::string sched = "fifo";
  driver::DeviceOptions device;
  bool align_start = false;
};

Result<ScaleEntry> measure(const WorkloadSpec& spec, Mode mode, uint32_t vms, const ScaleSetup& setup) {
  const uint32_t runs = setup.runs;
  const std::string& sched = setup.sched;
  RunConfig rc;
  rc.device = setup.device;
  rc.align_start = setup.align_start;
  rc.mode = mode;
  rc.vms = vms;
  rc.vram_per_vm = 256 * MiB;
  rc.scheduler = sched;
  rc.options.runs = runs;
  auto r = run_workload(spec, rc);
  if (!r) return std::unexpected(r.error());
  ScaleEntry e{&spec, mode, vms, runs};
  double begin = 0, end = 0;
  for (const auto& v : *r) {
    begin = begin == 0 ? v.result.timed_begin : std::min(begin, v.result.timed_begin);
    end = std::max(end, v.result.timed_end);
    e.correct = e.correct && v.result.correct;
    if (v.counters) {
      e.trapped += v.counters->trapped();
      e.submissions += v.counters->submissions;
    }
  }
  e.window_s = end - begin;
  e.per_s = e.window_s > 0 ? static_cast<double>(vms) * runs / e.window_s : 0;
  return e;
}

void usage() {
  std::cerr << "usage: vgpu-bench scale [--vms 1,2,4,8] [--modes fv-naive,fv-opt] [--workloads gemm2,MMUL]\n"
               "                        [--runs N] [--scheduler fifo|credit|band] [--json FILE]\n"
               "                        [--wait irq|poll] [--wait-spin-us N] [--align-start yes|no]\n";
}

// The median of REPEATS measurements, by throughput.
Result<ScaleEntry> measure_median(const WorkloadSpec& spec, Mode mode, uint32_t vms, const ScaleSetup& setup) {
  std::vector<ScaleEntry> all;
  for (uint32_t i = 0; i < REPEATS; ++i) {
    auto e = measure(spec, mode, vms, setup);
    if (!e) return std::unexpected(e.error());
    all.push_back(*e);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.per_s < b.per_s; });
  return all[all.size() / 2];
}

}  // namespace

int scale_main(std::span<char*> args) {
  std::vector<uint32_t> vm_counts{1, 2, 4, 8};
  std::vector<Mode> modes{Mode::fv_naive, Mode::fv_opt};
  std::vector<const WorkloadSpec*> chosen{find("gemm2"), find("MMUL")};
  ScaleSetup setup;
  uint32_t& runs = setup.runs;
  std::string& sched = setup.sched;
  std::string json_path;
  const FlagHandler scheduler = [&sched](std::string_view v) -> Status {
    if (v != "fifo" && v != "credit" && v != "band")
      return fail(Errc::invalid_argument, "--scheduler: '" + std::string(v) + "' is not fifo, credit or band");
    sched = v;
    return {};
  };
  FlagHandlers flags{{"--vms", parsed_flag(vm_counts, [](std::string_view v) { return parse_counts("--vms", v, 16); })},
                     {"--modes", parsed_flag(modes, parse_modes)},
                     {"--workloads", parsed_flag(chosen,
                                                 [](std::string_view v) {
                                                   auto w = parse_workloads(v);
                                                   if (!w) w = std::unexpected(w.error().context("--workloads"));
                                                   return w;
                                                 })},
                     {"--runs", count_flag("--runs", runs, 100000)},
                     {"--scheduler", scheduler},
                     {"--json", text_flag(json_path)},
                     {"--align-start", [&setup](std::string_view v) -> Status {
                        if (v != "yes" && v != "no") return fail(Errc::invalid_argument, "--align-start: yes or no");
                        setup.align_start = v == "yes";
                        return {};
                      }}};
  add_wait_flags(flags, setup.device);
  if (Status s = parse_flags(args, flags); !s) {
    std::cerr << "vgpu-bench scale: " << s.error().message << "\n";
    usage();
    return 2;
  }

  std::vector<ScaleEntry> entries;
  bool all_ok = true;
  for (const WorkloadSpec* spec : chosen) {
    auto native = measure_median(*spec, Mode::native, 1, setup);
    if (!native) {
      std::cerr << "vgpu-bench scale: " << native.error().what() << "\n";
      return 1;
    }
    std::optional<ScaleEntry> base = *native;
    base->ratio = 1;
    const double native_per_s = base->per_s;
    all_ok = all_ok && base->correct;
    entries.push_back(*base);
    for (Mode mode : modes) {
      if (mode == Mode::native) continue;  // native owns the GPU: 1 VM, the baseline above
      for (uint32_t vms : vm_counts) {
        std::fprintf(stderr, "  %-8s %-8s %u VMs ...\n", std::string(spec->name).c_str(), mode_name(mode), vms);
        auto e = measure_median(*spec, mode, vms, setup);
        if (!e) {
          std::cerr << "  failed: " << e.error().what() << "\n";
          all_ok = false;
          continue;
        }
        e->ratio = native_per_s > 0 ? e->per_s / native_per_s : 0;
        all_ok = all_ok && e->correct;
        entries.push_back(*e);
      }
    }
  }

  std::printf("\n%-8s %-8s %4s %6s %10s %12s %9s %8s %12s\n", "workload", "mode", "vms", "runs", "window s", "runs/s",
              "ratio", "correct", "trapped");
  for (const auto& e : entries)
    std::printf("%-8s %-8s %4u %6u %10.3f %12.2f %9.3f %8s %12lu\n", std::string(e.spec->name).c_str(),
                mode_name(e.mode), e.vms, e.runs, e.window_s, e.per_s, e.ratio, e.correct ? "yes" : "NO", e.trapped);
  std::printf("\nfence waits: %s; timed starts %s\n", wait_name(setup.device).c_str(),
              setup.align_start ? "aligned across VMs" : "not aligned");
  std::printf("each point: the median of %u fresh measurements\n", REPEATS);
  std::printf("runs/s = VMs x runs / window (first launch to last fence over all VMs); ratio = over 1 native VM\n");

  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "{\"suite\": \"scale\", \"scheduler\": " << json_string(sched) << ", \"results\": [\n";
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      out << strfmt(
                 "  {\"workload\": %s, \"mode\": \"%s\", \"vms\": %u, \"runs_per_vm\": %u, \"window_s\": %.6g, "
                 "\"throughput_per_s\": %.6g, \"ratio_to_native\": %.4f, \"correct\": %s, "
                 "\"counters\": {\"trapped\": %lu, \"submissions\": %lu}}",
                 json_string(e.spec->name).c_str(), mode_name(e.mode), e.vms, e.runs, e.window_s, e.per_s, e.ratio,
                 e.correct ? "true" : "false", e.trapped, e.submissions)
          << (i + 1 < entries.size() ? ",\n" : "\n");
    }
    out << "]}\n";
    if (!out) {
      std::cerr << "vgpu-bench scale: cannot write " << json_path << "\n";
      return 1;
    }
    std::printf("JSON: %s\n", json_path.c_str());
  }
  return all_ok ? 0 : 1;
}

}  // namespace vgpu::bench
