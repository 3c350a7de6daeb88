// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench workloads: the suite at one VM per mode, modes side by side.
//   workloads [--modes native,fv-naive,fv-opt,pv] [--runs N] [--only NAME,...]
//             [--naive-bar1-mib M] [--trap-reads N] [--json FILE]
//             [--inputs resident|pageable|pinned] [--trace-launches on|off]
// ratio_to_native: the mode's throughput (work per run / median) over
// native's, which is native median / mode median when both did the same
// work. fv-naive's BAR1 bandwidth runs move --naive-bar1-mib
// (default 4) MiB: every 32-bit access of theirs traps. --inputs: where
// the compute workloads (gemm*, conv*, matmul320, MMUL) take their inputs
// from and put their output, each timed run (testbed/workloads/
// kernel_io.h); other workloads ignore it (their "inputs" is null).
// --trace-launches on: where each waited launch's time goes, phase by
// phase from the driver's call to the fence wait's return, as offsets from
// its doorbell (common/launch_trace.h; docs/benchmarks.md, "Launch phases").
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "common/launch_trace.h"
#include "bench/workloads/paired.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/workloads/run.h"

namespace vgpu::bench {
namespace {

using testbed::Mode;
using namespace testbed::workloads;

// One workload in one mode: the first instance's result (details, and the
// counters with the runs they cover), the run times of every instance
// pooled, and whether every instance was correct.
struct Entry {
  const WorkloadSpec* spec;
  Mode mode;
  WorkloadResult result;
  uint32_t slice = VGPU_OPT_SLICE_BLOCKS_DEFAULT;  // fv modes: the VM's slice-blocks
  std::optional<mediator::CounterSnapshot> counters;
  std::vector<double> seconds;
  std::vector<double> instance_medians;  // one per fresh instance (bench/workloads/paired.h)
  std::vector<double> instance_p50_us;   // WorkloadResult::launch_p50_us, one per fresh instance
  bool correct = true;
  uint32_t instances = 0;
  double median_s = 0;
  std::optional<double> ratio;
  // --trace-launches: the first instance's launch phases and how many launches they cover.
  std::optional<std::array<LaunchPhaseFigures, static_cast<size_t>(LaunchPhase::count)>> phases;
  uint64_t traced_launches = 0;
};

const Entry* find_entry(const std::vector<Entry>& entries, const WorkloadSpec* spec, Mode m) {
  for (const auto& x : entries)
    if (x.spec == spec && x.mode == m) return &x;
  return nullptr;
}

// Issue 11's check, PV >= fv-opt, where the two differ by less than the
// spread between fresh instances: pv's speed relative to fv-opt's with a
// 95% bootstrap interval over instances. "not slower": the interval
// reaches 1 (no instance-level evidence that pv is slower).
// Below this many instances a bootstrap interval of medians is made of
// the few samples themselves: no verdict.
constexpr size_t MIN_INSTANCES_FOR_VERDICT = 8;

// A verdict on a ratio of medians b / a with its interval: b larger, b
// smaller, or no evidence either way; none below MIN_INSTANCES_FOR_VERDICT.
const char* verdict(const RatioCi& r, size_t instances, const char* larger, const char* smaller) {
  if (instances < MIN_INSTANCES_FOR_VERDICT) return "(too few instances)";
  return r.low > 1.0 ? larger : r.high < 1.0 ? smaller : "not different";
}

void print_pv_against_fv_opt(const std::vector<const WorkloadSpec*>& only, const std::vector<Entry>& entries) {
  std::vector<std::pair<const WorkloadSpec*, std::pair<const Entry*, const Entry*>>> pairs;
  for (const WorkloadSpec* spec : only) {
    const Entry* fv = find_entry(entries, spec, Mode::fv_opt);
    const Entry* pv = find_entry(entries, spec, Mode::pv);
    if (fv && pv) pairs.push_back({spec, {fv, pv}});
  }
  if (pairs.empty()) return;
  // "On every workload" is one claim about all rows at once: each row's
  // interval is widened to 1 - 0.05 / rows (Bonferroni), so that the
  // chance of any spurious verdict stays at 5%.
  const double alpha = 0.05 / static_cast<double>(pairs.size());
  std::printf(
      "\npv speed / fv-opt speed (fv-opt median / pv median), bootstrap interval over instances, "
      "%.2f%% per row (95%% for all %zu rows together)\n%-12s | %-7s %-17s | %s\n",
      100 * (1 - alpha), pairs.size(), "workload", "ratio", "interval", "verdict");
  int slower = 0;
  for (const auto& [spec, modes] : pairs) {
    const auto& [fv, pv] = modes;
    const RatioCi r = bootstrap_speed_ratio(fv->instance_medians, pv->instance_medians, alpha);
    const size_t n = std::min(fv->instance_medians.size(), pv->instance_medians.size());
    slower += n >= MIN_INSTANCES_FOR_VERDICT && r.high < 1.0;
    std::printf("%-12s | %-7.3f [%.3f, %.3f]    | %s\n", std::string(spec->name).c_str(), r.ratio, r.low, r.high,
                verdict(r, n, "pv faster", "pv SLOWER"));
  }
  std::printf("pv measurably slower than fv-opt on %d of %zu workloads (verdicts need >= %zu instances of each)\n",
              slower, pairs.size(), MIN_INSTANCES_FOR_VERDICT);
}

// Issue 13's check on single launches, native <= fv-opt <= native + 5 us
// at p50: each mode's p50 (the median over fresh instances, interleaved
// with native's) over native's, with a 95% bootstrap interval over the
// instances (Bonferroni over the rows).
void print_launch_p50_against_native(const std::vector<const WorkloadSpec*>& only, const std::vector<Entry>& entries) {
  std::vector<std::pair<const Entry*, const Entry*>> pairs;
  for (const WorkloadSpec* spec : only) {
    const Entry* native = find_entry(entries, spec, Mode::native);
    if (native == nullptr || native->instance_p50_us.empty()) continue;
    for (const Entry& e : entries)
      if (e.spec == spec && e.mode != Mode::native && !e.instance_p50_us.empty()) pairs.push_back({native, &e});
  }
  if (pairs.empty()) return;
  const double alpha = 0.05 / static_cast<double>(pairs.size());
  std::printf(
      "\nlaunch p50, mode / native (medians over instances), bootstrap interval over instances, %.2f%% per row\n"
      "%-12s %-8s | %-9s %-9s | %-7s %-17s | %s\n",
      100 * (1 - alpha), "workload", "mode", "native us", "mode us", "ratio", "interval", "verdict");
  for (const auto& [native, e] : pairs) {
    const RatioCi r = bootstrap_speed_ratio(native->instance_p50_us, e->instance_p50_us, alpha);
    const size_t n = std::min(native->instance_p50_us.size(), e->instance_p50_us.size());
    std::printf("%-12s %-8s | %-9.1f %-9.1f | %-7.3f [%.3f, %.3f]    | %s\n", std::string(e->spec->name).c_str(),
                mode_name(e->mode), median(native->instance_p50_us), median(e->instance_p50_us), 1.0 / r.ratio,
                1.0 / r.high, 1.0 / r.low, verdict(r, n, "native slower", "native faster"));
  }
}

double throughput(const Entry& e) { return e.median_s > 0 ? e.result.work_per_run / e.median_s : 0; }

// The first instance's counters and the figures derived from them.
nlohmann::ordered_json counters_json(const Entry& e) {
  if (!e.counters) return nlohmann::ordered_json::object();
  nlohmann::ordered_json j = e.counters->json();
  const double trapped = static_cast<double>(e.counters->trapped());
  if (e.result.launches > 0) {
    const double launches = static_cast<double>(e.result.launches);
    j["trapped_per_launch"] = trapped / launches;
    j["interrupts_per_launch"] = static_cast<double>(e.counters->interrupts) / launches;
  }
  if (e.counters->doorbells > 0) j["trapped_per_doorbell"] = trapped / static_cast<double>(e.counters->doorbells);
  if (e.result.runs > 0) j["trapped_per_run"] = trapped / e.result.runs;
  return j;
}

nlohmann::ordered_json phases_json(const Entry& e) {
  if (!e.phases) return nullptr;
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (const LaunchPhaseFigures& f : *e.phases)
    phases.push_back(
        {{"phase", f.name}, {"samples", f.samples}, {"p10_us", f.p10_us}, {"p50_us", f.p50_us}, {"p90_us", f.p90_us}});
  return {{"launches", e.traced_launches}, {"phases", phases}};
}

// Phases as rows, traced entries as columns: the median offset from the doorbell.
void print_phases(const std::vector<Entry>& entries) {
  std::vector<const Entry*> traced;
  for (const auto& e : entries)
    if (e.phases) traced.push_back(&e);
  if (traced.empty()) return;
  std::printf("\nlaunch phases: median us from the doorbell (launches traced)\n%-16s", "phase");
  for (const Entry* e : traced)
    std::printf(" %18s", strfmt("%s/%s", std::string(e->spec->name).c_str(), mode_name(e->mode)).c_str());
  std::printf("\n%-16s", "");
  for (const Entry* e : traced)
    std::printf(" %18s", strfmt("(%lu)", static_cast<unsigned long>(e->traced_launches)).c_str());
  std::printf("\n");
  for (size_t i = 0; i < static_cast<size_t>(LaunchPhase::count); ++i) {
    std::printf("%-16s", std::string(LaunchTrace::name(static_cast<LaunchPhase>(i))).c_str());
    for (const Entry* e : traced) {
      const LaunchPhaseFigures& f = (*e->phases)[i];
      std::printf(" %18s", f.samples ? strfmt("%.1f", f.p50_us).c_str() : "-");
    }
    std::printf("\n");
  }
}

nlohmann::ordered_json entry_json(const Entry& e) {
  return {{"workload", e.spec->name},
          {"mode", mode_name(e.mode)},
          {"slice_blocks", slice_name(e.slice)},
          {"vms", 1},
          {"runs", e.seconds.size()},
          {"instances", e.instances},
          {"median_s", e.median_s},
          {"instance_medians_s", e.instance_medians},
          {"instance_launch_p50_us", e.instance_p50_us},
          {"ratio_to_native", e.ratio ? nlohmann::ordered_json(*e.ratio) : nullptr},
          {"correct", e.correct},
          {"work_per_run", e.result.work_per_run},
          {"work_unit", e.result.work_unit},
          {"inputs", e.result.inputs.empty() ? nullptr : nlohmann::ordered_json(e.result.inputs)},
          {"checksum", strfmt("%016lx", e.result.checksum)},
          {"detail", e.result.detail},
          {"counters", counters_json(e)},
          {"launch_phases", phases_json(e)}};
}

void usage() {
  std::cerr << "usage: vgpu-bench workloads [--modes native,fv-naive,fv-opt,pv] [--runs N] [--only NAME,...]\n"
               "                            [--instances N] [--naive-bar1-mib M] [--trap-reads N] [--json FILE]\n"
               "                            [--wait irq|poll] [--wait-spin-us N] [--turn-ms N]\n"
               "                            [--inputs resident|pageable|pinned] [--trace-launches on|off]\n"
               "                            [--ring-ahead on|off] [--slice-blocks auto[,0,N]]\n"
               "                            [--slice-on-demand on|off]\n"
               "  --inputs: gemm*, conv*, matmul320 and MMUL only. resident (default): inputs\n"
               "    uploaded once, a run times the kernel alone; pageable: each run uploads the\n"
               "    inputs from and downloads the output to ordinary host memory (BAR1 or\n"
               "    staging); pinned: each run copies them from/to pinned host memory on the\n"
               "    copy engine (Context::alloc_host, DMA). Outputs are checked in every case.\n"
               "  --trace-launches on: each waited launch's phases, as offsets from its doorbell.\n"
               "  --turn-ms: a VM's turn on the GPU in fv modes (0: a turn runs up to GP_PUT, and\n"
               "    the mediator passes each doorbell on at once instead of one GPFIFO entry at a time).\n"
               "  --ring-ahead: fv modes, bounded turns: a doorbell during a VM's turn rings the next\n"
               "    entry behind the one on the GPU (on, the default) or waits for its end (off).\n"
               "  --slice-blocks: fv modes: the VM's slicing, each value a table of its own, the\n"
               "    runs interleaved (auto, the default: pieces of turn-ms/4; 0: whole; N blocks).\n"
               "  --slice-on-demand: fv modes, slice-blocks auto: a piece ends at its time only while\n"
               "    another VM waits (on, the default) or always (off).\n";
}

// The command line.
struct Setup {
  std::vector<Mode> modes{Mode::native, Mode::fv_naive, Mode::fv_opt, Mode::pv};
  std::vector<const WorkloadSpec*> only;
  std::optional<uint32_t> runs;
  // Fresh testbeds per mode, interleaved across modes: run times vary more
  // between instances (memory placement) than between modes.
  uint32_t instances = 1;
  uint32_t naive_bar1_mib = 4, trap_reads = 200'000;
  std::string json_path;
  driver::DeviceOptions device;
  InputPath inputs = InputPath::resident;
  bool trace = false;
  uint32_t turn_ms = static_cast<uint32_t>(mediator::HostConfig{}.turn_ns / 1'000'000);
  bool ring_ahead = mediator::HostConfig{}.ring_ahead;
  bool slice_on_demand = mediator::HostConfig{}.slice_on_demand;
  std::vector<uint32_t> slices{VGPU_OPT_SLICE_BLOCKS_DEFAULT};
};

FlagHandlers flags_of(Setup& s) {
  const auto named = [](const char* flag, auto parse) {
    return [flag, parse](std::string_view v) {
      auto r = parse(v);
      if (!r) r = std::unexpected(r.error().context(flag));
      return r;
    };
  };
  FlagHandlers flags{{"--modes", parsed_flag(s.modes, parse_modes)},
                     {"--runs",
                      parsed_flag(s.runs, [](std::string_view v) { return parse_count("--runs", v, 100000); })},
                     {"--only", parsed_flag(s.only, named("--only", parse_workloads))},
                     {"--instances", count_flag("--instances", s.instances, 100)},
                     {"--naive-bar1-mib", count_flag("--naive-bar1-mib", s.naive_bar1_mib, 64)},
                     {"--trap-reads", count_flag("--trap-reads", s.trap_reads, 100'000'000)},
                     {"--json", text_flag(s.json_path)},
                     {"--inputs", parsed_flag(s.inputs, named("--inputs", parse_input_path))},
                     {"--trace-launches", on_off_flag("--trace-launches", s.trace)},
                     {"--turn-ms", option_flag(VGPU_OPT_TURN_MS, s.turn_ms)},
                     {"--ring-ahead", option_flag(VGPU_OPT_RING_AHEAD, s.ring_ahead)},
                     {"--slice-on-demand", on_off_flag("--slice-on-demand", s.slice_on_demand)},
                     {"--slice-blocks", parsed_flag(s.slices, [](std::string_view v) {
                        return parse_option_list(VGPU_OPT_SLICE_BLOCKS, v);
                      })}};
  add_wait_flags(flags, s.device);
  return flags;
}

// One fresh instance of the workload in one mode and slicing, added to
// its entry (made by the first instance). false when it failed to run.
bool run_instance(const Setup& s, const WorkloadSpec* spec, Mode mode, uint32_t slice, std::optional<Entry>& entry) {
  RunConfig rc;
  rc.slice_blocks = {slice};
  rc.mode = mode;
  rc.device = s.device;
  rc.turn_ns = uint64_t{s.turn_ms} * 1'000'000;
  rc.ring_ahead = s.ring_ahead;
  rc.slice_on_demand = s.slice_on_demand;
  rc.options.runs = s.runs.value_or(spec->default_runs);
  rc.options.inputs = s.inputs;
  const bool bar1 = spec->name.find("bar1") != std::string_view::npos;
  if (mode == Mode::fv_naive && bar1) rc.options.bandwidth_bytes = uint64_t{s.naive_bar1_mib} * MiB;
  std::fprintf(stderr, "  %-12s %-8s ...", std::string(spec->name).c_str(), mode_name(mode));
  LaunchTrace::reset();
  LaunchTrace::enable(s.trace);
  auto r = run_workload(*spec, rc);
  LaunchTrace::enable(false);
  if (!r) {
    std::fprintf(stderr, " failed: %s\n", r.error().what().c_str());
    return false;
  }
  const WorkloadResult& res = (*r)[0].result;
  std::fprintf(stderr, " %.3f ms%s\n", median(res.seconds) * 1e3, res.correct ? "" : "  INCORRECT");
  if (!entry) entry = Entry{spec, mode, res, slice, (*r)[0].counters, {}, {}, {}, true, 0, 0, std::nullopt};
  Entry& e = *entry;
  if (s.trace && !e.phases) {
    e.phases = LaunchTrace::figures();
    e.traced_launches = LaunchTrace::launches();
  }
  e.seconds.insert(e.seconds.end(), res.seconds.begin(), res.seconds.end());
  e.instance_medians.push_back(median(res.seconds));
  if (res.launch_p50_us) e.instance_p50_us.push_back(*res.launch_p50_us);
  e.correct = e.correct && res.correct;
  ++e.instances;
  return true;
}

// Every instance of one workload in every mode and slicing, interleaved;
// the entries (with their ratio to native) appended. false when any failed.
bool measure(const Setup& s, const WorkloadSpec* spec, std::vector<Entry>& entries) {
  bool all_ok = true;
  std::vector<std::optional<Entry>> per_mode(s.modes.size() * s.slices.size());
  for (uint32_t inst = 0; inst < s.instances; ++inst) {
    for (size_t ms = 0; ms < per_mode.size(); ++ms) {
      const Mode mode = s.modes[ms / s.slices.size()];
      if (mode == Mode::native && ms % s.slices.size() != 0) continue;  // no slicing there: once
      all_ok = run_instance(s, spec, mode, s.slices[ms % s.slices.size()], per_mode[ms]) && all_ok;
    }
  }
  std::optional<double> native_tp;
  for (auto& pm : per_mode) {
    if (!pm) continue;
    pm->median_s = median(pm->seconds);
    if (pm->mode == Mode::native) native_tp = throughput(*pm);
    all_ok = all_ok && pm->correct;
    entries.push_back(std::move(*pm));
  }
  for (auto& e : entries)
    if (e.spec == spec && native_tp && *native_tp > 0) e.ratio = throughput(e) / *native_tp;
  return all_ok;
}

// The table: one row per workload, modes side by side.
void print_modes(const Setup& s, const std::vector<Entry>& entries) {
  std::printf("\n%-12s", "workload");
  for (Mode m : s.modes) std::printf(" | %-9s %-8s %-7s", mode_name(m), "ms", "ratio");
  std::printf(" | correct | trapped/run, trapped/launch, irq/launch (fv)\n");
  for (const WorkloadSpec* spec : s.only) {
    std::printf("%-12s", std::string(spec->name).c_str());
    std::string correct, traps;
    for (Mode m : s.modes) {
      const Entry* e = find_entry(entries, spec, m);
      if (!e) {
        std::printf(" | %-9s %-8s %-7s", "", "failed", "");
        correct += "x";
        continue;
      }
      std::printf(" | %-9s %-8.3f %-7s", "", e->median_s * 1e3, e->ratio ? strfmt("%.3f", *e->ratio).c_str() : "-");
      correct += e->correct ? "y" : "N";
      if (e->counters && e->result.runs && e->result.launches)
        traps += strfmt("%s%.0f, %.2f, %.2f", traps.empty() ? "" : " / ",
                        static_cast<double>(e->counters->trapped()) / e->result.runs,
                        static_cast<double>(e->counters->trapped()) / static_cast<double>(e->result.launches),
                        static_cast<double>(e->counters->interrupts) / static_cast<double>(e->result.launches));
    }
    std::printf(" | %-7s | %s\n", correct.c_str(), traps.c_str());
  }
}

// The shadowing costs per mode, over the timed part (GPUvm's dominant
// costs): trapped accesses, guest page-table entries scanned, shadow
// entries written, PV hypercall batches; per run.
void print_shadowing(const Setup& s, const std::vector<Entry>& entries) {
  std::printf("\nper run: trapped / pte_scanned / shadow entries written / hypercall batches (fv modes)\n");
  std::printf("%-12s", "workload");
  for (Mode m : s.modes)
    if (m != Mode::native) std::printf(" | %-30s", mode_name(m));
  std::printf("\n");
  for (const WorkloadSpec* spec : s.only) {
    std::printf("%-12s", std::string(spec->name).c_str());
    for (Mode m : s.modes) {
      if (m == Mode::native) continue;
      const Entry* e = find_entry(entries, spec, m);
      if (!e || !e->counters || e->result.runs == 0) {
        std::printf(" | %-30s", "-");
        continue;
      }
      const double runs_d = e->result.runs;
      const auto per = [&](uint64_t v) { return static_cast<double>(v) / runs_d; };
      std::printf(" | %-30s",
                  strfmt("%.0f / %.0f / %.0f / %.0f", per(e->counters->trapped()), per(e->counters->entries_scanned),
                         per(e->counters->shadow_writes), per(e->counters->pv_batches))
                      .c_str());
    }
    std::printf("\n");
  }
}

// One set of tables per slicing (native, unsliced, in each).
void print_tables(const Setup& s, const std::vector<Entry>& all) {
  for (uint32_t slice : s.slices) {
    std::vector<Entry> entries;
    for (const Entry& e : all)
      if (e.mode == Mode::native || e.slice == slice) entries.push_back(e);
    if (s.slices.size() > 1) std::printf("\n== slice-blocks %s (fv modes)\n", slice_name(slice).c_str());
    print_modes(s, entries);
    print_shadowing(s, entries);
    print_pv_against_fv_opt(s.only, entries);
    print_launch_p50_against_native(s.only, entries);
    print_phases(entries);
  }
}

void print_footer(const Setup& s, const TrapCost& trap, const std::vector<Entry>& entries) {
  std::printf("\nfence waits: %s\n", wait_name(s.device).c_str());
  std::printf("inputs: %s (gemm*, conv*, matmul320, MMUL)\n", input_path_name(s.inputs));
  std::printf("slice-on-demand: %s (slice-blocks auto)\n", s.slice_on_demand ? "on" : "off");
  std::printf("ratio = mode throughput / native throughput (native median / mode median for equal work)\n");
  const std::string per_read = strfmt("fv-opt %.0f-%.0f ns, native %.0f-%.0f ns per read over %u passes of %u reads",
                                      trap.fv_ns_per_read, trap.fv_worst_ns, trap.native_ns_per_read,
                                      trap.native_worst_ns, trap.passes, trap.reads);
  if (trap.cost_ns)
    std::printf("trap cost: %.0f ns per trapped BOOT_0 read (%s)\n", *trap.cost_ns, per_read.c_str());
  else
    std::printf("trap cost: not measurable here, the modes' spreads overlap (%s)\n", per_read.c_str());
  std::printf("\ndetails:\n");
  for (const auto& e : entries)
    std::printf("  %-12s %-8s %s\n", std::string(e.spec->name).c_str(), mode_name(e.mode), e.result.detail.c_str());
}

bool write_json(const Setup& s, const TrapCost& trap, const std::vector<Entry>& entries) {
  nlohmann::ordered_json j = {{"suite", "workloads"},
                              {"inputs", input_path_name(s.inputs)},
                              {"slice_on_demand", s.slice_on_demand},
                              {"trap_cost_ns", trap.cost_ns ? nlohmann::ordered_json(*trap.cost_ns) : nullptr},
                              {"trap_cost",
                               {{"reads", trap.reads},
                                {"native_ns_per_read", trap.native_ns_per_read},
                                {"native_worst_ns_per_read", trap.native_worst_ns},
                                {"fv_opt_ns_per_read", trap.fv_ns_per_read},
                                {"fv_opt_worst_ns_per_read", trap.fv_worst_ns}}},
                              {"results", nlohmann::ordered_json::array()}};
  for (const Entry& e : entries) j["results"].push_back(entry_json(e));
  return write_json_file("workloads", s.json_path, j);
}

}  // namespace

int workloads_main(std::span<char*> args) {
  Setup s;
  for (const auto& w : registry()) s.only.push_back(&w);
  if (Status st = parse_flags(args, flags_of(s)); !st) {
    std::cerr << "vgpu-bench workloads: " << st.error().message << "\n";
    usage();
    return 2;
  }
  std::vector<Entry> entries;
  bool all_ok = true;
  for (const WorkloadSpec* spec : s.only) all_ok = measure(s, spec, entries) && all_ok;
  std::fprintf(stderr, "  trap cost ...\n");
  const TrapCost trap = measure_trap_cost(s.trap_reads);
  print_tables(s, entries);
  print_footer(s, trap, entries);
  if (!s.json_path.empty() && !write_json(s, trap, entries)) return 1;
  return all_ok ? 0 : 1;
}

}  // namespace vgpu::bench
