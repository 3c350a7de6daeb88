// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench scale: N VMs at once per mode, each running a throughput
// workload for a fixed number of runs.
//   scale [--vms 1,2,4,8] [--modes fv-naive,fv-opt] [--workloads gemm2,MMUL]
//         [--runs N] [--scheduler band|fifo|credit] [--json FILE]
//         [--wait irq|poll] [--wait-spin-us N] [--align-start on|off] [--repeats N]
//         [--turn-hold-us LIST] [--turn-ms N]
// Defaults: 100 runs per VM, 5 rounds, the host's scheduler (band), its
// turn hold and slice, aligned starts.
// --align-start on (default): every VM's first timed launch waits for
// the others' (a barrier), so that no VM's untimed set-up overlaps
// another's timing; no: each VM starts timing when its set-up is done.
// Aggregate throughput = VMs x runs / (last VM's last fence - first VM's
// first launch); ratio_to_native is over one native VM's throughput
// measured the same way, doing the same work: the baseline of the N-VM
// points is one native VM running N x runs, measured just before them in
// every round (a 20-run window of gemm2 is 30 ms, and the host's speed
// drifts by a third over such windows on this machine).
// --repeats N (default 5): every point, the native baselines included, is
// measured N times, interleaved (round r measures each VM count's native
// baseline and then its points once), so that a drift of the host's speed
// falls on a baseline and its points alike. A point's ratio is the median
// of its rounds' ratios to the baseline of the same round, with a
// bootstrap interval over the N rounds (bench/workloads/paired.h;
// Bonferroni-widened over the points of the table); its runs/s and
// window are those of its median round.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "bench/workloads/paired.h"
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
  uint64_t hold_us = 0;
  double window_s = 0, per_s = 0, ratio = 0;
  bool correct = true;
  uint64_t trapped = 0, submissions = 0;
  std::optional<mediator::TurnCounts> turns;  // fv modes: the host's, whole run
};

struct ScaleSetup {
  // A VM's 20 runs of gemm2 took 30 ms: too short a window on a machine
  // whose speed moves by a third from one such window to the next.
  uint32_t runs = 100;
  // One measurement alone varies by a factor of two on a loaded machine
  // (and by 40% between invocations on a quiet one): the baseline and the
  // points it divides are estimated alike, from interleaved rounds.
  uint32_t repeats = 5;
  std::string sched = RunConfig{}.scheduler;
  driver::DeviceOptions device;
  // Aggregate throughput of the VMs' timed runs: another VM's untimed
  // set-up (its context, the 5.7 MB upload of gemm2) is not in it.
  bool align_start = true;
  uint32_t turn_ms = static_cast<uint32_t>(mediator::HostConfig{}.turn_ns / 1'000'000);  // 0: up to GP_PUT
};

Result<ScaleEntry> measure(const WorkloadSpec& spec, Mode mode, uint32_t vms, uint32_t runs, uint64_t hold_us,
                           const ScaleSetup& setup) {
  const std::string& sched = setup.sched;
  RunConfig rc;
  rc.device = setup.device;
  rc.align_start = setup.align_start;
  rc.mode = mode;
  rc.vms = vms;
  rc.vram_per_vm = 256 * MiB;
  rc.scheduler = sched;
  rc.options.runs = runs;
  rc.turn_hold_ns = hold_us * 1000;
  rc.turn_ns = uint64_t{setup.turn_ms} * 1'000'000;
  auto r = run_workload(spec, rc);
  if (!r) return std::unexpected(r.error());
  ScaleEntry e{&spec, mode, vms, runs, hold_us};
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
  if (!r->empty()) e.turns = r->front().host_turns;
  e.window_s = end - begin;
  e.per_s = e.window_s > 0 ? static_cast<double>(vms) * runs / e.window_s : 0;
  return e;
}

void usage() {
  std::cerr << "usage: vgpu-bench scale [--vms 1,2,4,8] [--modes fv-naive,fv-opt] [--workloads gemm2,MMUL]\n"
               "                        [--runs N] [--scheduler band|fifo|credit] [--json FILE]\n"
               "                        [--wait irq|poll] [--wait-spin-us N] [--align-start on|off] [--repeats N]\n"
               "                        [--turn-hold-us LIST] [--turn-ms N]\n";
}

// One point of the table: every round's measurement, then its figures.
struct ScalePoint {
  const WorkloadSpec* spec;
  Mode mode;
  uint32_t vms;
  uint32_t runs;      // per VM
  uint32_t base_vms;  // native: the VM count it is the baseline of
  uint64_t hold_us;
  std::vector<ScaleEntry> rounds;
  ScaleEntry median;  // the round of median throughput
  RatioCi ratio;      // over the native baseline's rounds
};

// Seconds per run of the aggregate (the bootstrap compares times).
std::vector<double> seconds_per_run(const ScalePoint& p) {
  std::vector<double> t;
  for (const ScaleEntry& e : p.rounds) t.push_back(e.per_s > 0 ? 1.0 / e.per_s : 0);
  return t;
}

nlohmann::ordered_json turns_json(const ScaleEntry& e) {
  if (!e.turns) return nullptr;
  const mediator::TurnCounts& t = *e.turns;
  return {{"started", t.started},
          {"out_of_time", t.out_of_time},
          {"dry", t.dry},
          {"holds_kept", t.holds_kept},
          {"holds_expired", t.holds_expired}};
}

void summarize(ScalePoint& p) {
  std::vector<ScaleEntry> sorted = p.rounds;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.per_s < b.per_s; });
  p.median = sorted[sorted.size() / 2];
  for (const ScaleEntry& e : p.rounds) p.median.correct = p.median.correct && e.correct;
}

// The command line: what to measure and how.
struct ScaleArgs {
  std::vector<uint32_t> vm_counts{1, 2, 4, 8};
  // The turn hold(s) to measure each fv point with (docs/scheduler.md).
  std::vector<uint32_t> holds_us{static_cast<uint32_t>(mediator::HostConfig{}.turn_hold_ns / 1000)};
  std::vector<Mode> modes{Mode::fv_naive, Mode::fv_opt};
  std::vector<const WorkloadSpec*> chosen{find("gemm2"), find("MMUL")};
  ScaleSetup setup;
  std::string json_path;
};

FlagHandlers flags_of(ScaleArgs& a) {
  FlagHandlers flags{
      {"--vms", parsed_flag(a.vm_counts, [](std::string_view v) { return parse_counts("--vms", v, 16); })},
      {"--modes", parsed_flag(a.modes, parse_modes)},
      {"--workloads", parsed_flag(a.chosen,
                                  [](std::string_view v) {
                                    auto w = parse_workloads(v);
                                    if (!w) w = std::unexpected(w.error().context("--workloads"));
                                    return w;
                                  })},
      {"--runs", count_flag("--runs", a.setup.runs, 100000)},
      {"--repeats", count_flag("--repeats", a.setup.repeats, 1000)},
      {"--turn-hold-us",
       parsed_flag(a.holds_us, [](std::string_view v) { return parse_counts("--turn-hold-us", v, 1000000, 0); })},
      {"--turn-ms", option_flag(VGPU_OPT_TURN_MS, a.setup.turn_ms)},
      {"--scheduler",
       [&a](std::string_view v) -> Status {
         if (auto r = parse_option(VGPU_OPT_SCHEDULER, v); !r) return std::unexpected(r.error());
         a.setup.sched = v;
         return {};
       }},
      {"--json", text_flag(a.json_path)},
      {"--align-start", on_off_flag("--align-start", a.setup.align_start)}};
  add_wait_flags(flags, a.setup.device);
  return flags;
}

// Each workload at each VM count: native's baseline (one VM doing the N
// VMs' work: native owns the GPU), then each fv mode at each hold.
std::vector<ScalePoint> points_of(const ScaleArgs& a) {
  std::vector<ScalePoint> points;
  const uint32_t runs = a.setup.runs;
  for (const WorkloadSpec* spec : a.chosen)
    for (uint32_t vms : a.vm_counts) {
      points.push_back({spec, Mode::native, 1, vms * runs, vms, 0, {}, {}, {}});
      for (Mode mode : a.modes)
        if (mode != Mode::native)
          for (uint32_t hold : a.holds_us) points.push_back({spec, mode, vms, runs, vms, hold, {}, {}, {}});
    }
  return points;
}

// Every point once a round, the rounds interleaved.
Status run_rounds(const ScaleSetup& setup, std::vector<ScalePoint>& points) {
  for (uint32_t round = 0; round < setup.repeats; ++round) {
    for (ScalePoint& p : points) {
      std::fprintf(stderr, "  round %u/%u: %-8s %-8s %u VMs x %u runs, hold %lu us ...\n", round + 1, setup.repeats,
                   std::string(p.spec->name).c_str(), mode_name(p.mode), p.vms, p.runs,
                   static_cast<unsigned long>(p.hold_us));
      auto e = measure(*p.spec, p.mode, p.vms, p.runs, p.hold_us, setup);
      if (!e) return std::unexpected(e.error());
      p.rounds.push_back(*e);
    }
  }
  return {};
}

void print_points(const ScaleSetup& setup, const std::vector<ScalePoint>& points, double alpha, size_t compared) {
  std::printf("\n%-8s %-8s %4s %7s %6s %10s %12s %9s %17s %8s %12s %7s %13s\n", "workload", "mode", "vms", "hold us",
              "runs", "window s", "runs/s", "ratio", "interval", "correct", "trapped", "turns", "holds kept/exp");
  for (const ScalePoint& p : points) {
    const ScaleEntry& e = p.median;
    const std::string interval = p.mode == Mode::native || setup.repeats < 3
                                     ? "-"
                                     : strfmt("[%.3f, %.3f]", p.ratio.low, p.ratio.high);
    const std::string hold = p.mode == Mode::native ? "-" : std::to_string(p.hold_us);
    const std::string turns = e.turns ? std::to_string(e.turns->started) : "-";
    const std::string holds = e.turns ? strfmt("%lu/%lu", static_cast<unsigned long>(e.turns->holds_kept),
                                               static_cast<unsigned long>(e.turns->holds_expired))
                                      : "-";
    std::printf("%-8s %-8s %4u %7s %6u %10.3f %12.2f %9.3f %17s %8s %12lu %7s %13s\n",
                std::string(e.spec->name).c_str(), mode_name(e.mode), e.vms, hold.c_str(), e.runs, e.window_s, e.per_s,
                e.ratio, interval.c_str(), e.correct ? "yes" : "NO", e.trapped, turns.c_str(), holds.c_str());
  }
  std::printf("\nfence waits: %s; timed starts %s\n", wait_name(setup.device).c_str(),
              setup.align_start ? "aligned across VMs" : "not aligned");
  std::printf("each point: the median of %u rounds, interleaved with the native baseline's\n", setup.repeats);
  std::printf(
      "runs/s = VMs x runs / window (first launch to last fence over all VMs); ratio = over 1 native VM\n"
      "doing the same work (the native row above the points: VMs x runs, measured before them each round),\n"
      "ratio: the median of the rounds' ratios; interval: %.1f%% bootstrap over the rounds\n"
      "(Bonferroni over %zu points; none below 3 rounds)\n"
      "turns, holds kept/expired: the host's over the median round's whole run, set-up included\n",
      100 * (1 - alpha), compared);
}

bool write_json(const ScaleArgs& a, const std::vector<ScalePoint>& points, double alpha) {
  nlohmann::ordered_json j = {{"suite", "scale"},
                              {"scheduler", a.setup.sched},
                              {"rounds", a.setup.repeats},
                              {"alpha", alpha},
                              {"results", nlohmann::json::array()}};
  for (const ScalePoint& p : points) {
    const ScaleEntry& e = p.median;
    std::vector<double> rounds;
    for (const ScaleEntry& r : p.rounds) rounds.push_back(r.per_s);
    j["results"].push_back({{"workload", e.spec->name},
                            {"mode", mode_name(e.mode)},
                            {"vms", e.vms},
                            {"baseline_of_vms", p.base_vms},
                            {"turn_hold_us", p.hold_us},
                            {"runs_per_vm", e.runs},
                            {"window_s", e.window_s},
                            {"throughput_per_s", e.per_s},
                            {"ratio_to_native", e.ratio},
                            {"ratio_low", p.ratio.low},
                            {"ratio_high", p.ratio.high},
                            {"round_throughputs_per_s", rounds},
                            {"correct", e.correct},
                            {"counters", {{"trapped", e.trapped}, {"submissions", e.submissions}}},
                            {"host_turns", turns_json(e)}});
  }
  return write_json_file("scale", a.json_path, j);
}

}  // namespace

int scale_main(std::span<char*> args) {
  ScaleArgs a;
  if (Status s = parse_flags(args, flags_of(a)); !s) {
    std::cerr << "vgpu-bench scale: " << s.error().message << "\n";
    usage();
    return 2;
  }
  std::vector<ScalePoint> points = points_of(a);
  if (Status s = run_rounds(a.setup, points); !s) {
    std::cerr << "vgpu-bench scale: " << s.error().what() << "\n";
    return 1;
  }
  // Every point's interval at once: Bonferroni over the compared points.
  const size_t compared = std::max<size_t>(1, points.size() - a.chosen.size() * a.vm_counts.size());
  const double alpha = 0.05 / static_cast<double>(compared);
  const ScalePoint* base = nullptr;
  bool all_ok = true;
  for (ScalePoint& p : points) {
    summarize(p);
    if (p.mode == Mode::native) base = &p;  // listed just before the points it is the baseline of
    p.ratio = bootstrap_paired_ratio(seconds_per_run(*base), seconds_per_run(p), alpha);
    p.median.ratio = p.ratio.ratio;
    all_ok = all_ok && p.median.correct;
  }
  print_points(a.setup, points, alpha, compared);
  if (!a.json_path.empty() && !write_json(a, points, alpha)) return 1;
  return all_ok ? 0 : 1;
}

}  // namespace vgpu::bench
