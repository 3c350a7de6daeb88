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
// shares, and --slice-blocks a list of slicings for both VMs: auto (the
// default: pieces of turn-ms/4 by time), 0 (unsliced) or N blocks (a spin
// is one thread block per 100 us: 10 blocks = 1 ms slices). worst wait =
// VM0's longest launch-to-fence time less its kernel's length.
// --long-work spin10,spins6x3,copy (issue 37): VM1 runs one long operation
// instead (a 10 s spin; three 6 s spins rung at once; one LAUNCH_DMA of
// LONG_COPY_LINES 4-byte lines) while VM0 runs its kernels until VM1 is done.
//   fair [--policies fifo,credit,band] [--short-ms 1] [--long-ms 10[,30,...]]
//        [--weights 1:1] [--slice-blocks auto[,0,10,...]] [--seconds 3]
//        [--long-work spin10,spins6x3,copy] [--slice-on-demand on|off] [--json FILE]
// --slice-on-demand off: auto's pieces end at their time even when no
// other VM waits (docs/scheduler.md, "Cutting on demand").
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "testbed/testbed.h"
#include "vgpu/options.h"

namespace vgpu::bench {
namespace {

constexpr uint64_t NS_PER_MS = 1'000'000;
// The long copy: about 20 s of copy-engine work on the model.
constexpr uint32_t LONG_COPY_LINES = 86'700'000;
// A long operation at half the GPU takes twice its length: wait that long.
constexpr uint64_t LONG_WAIT_NS = 120'000'000'000;

struct FairEntry {
  std::string policy;
  uint32_t long_ms = 0;
  uint32_t slice_blocks = 0;
  std::string long_work;  // --long-work's name, or empty
  double gpu_ms[2] = {0, 0};
  uint64_t kernels[2] = {0, 0};
  uint64_t slice_resumes[2] = {0, 0};
  double worst_wait_ms = 0;  // VM0's
  double p99_wait_ms = 0;
  size_t wait_samples = 0;
  // The part of each wait that VM1's turns took (the scheduler's doing;
  // the rest is the host's: threads not run, traps, the model): worst, p99.
  double worst_turn_wait_ms = 0;
  double p99_turn_wait_ms = 0;
  size_t most_turns_waited = 0;  // of VM1, before VM0's next turn
  std::string worst_timeline;    // --timeline: the turns during VM0's worst wait
  double long_work_s = 0;
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
  std::string long_work;
  bool timeline = false;
  bool on_demand = mediator::HostConfig{}.slice_on_demand;  // --slice-on-demand
};

// The turns the host reports (--timeline), stamped on arrival.
struct TurnLog {
  struct Entry {
    std::chrono::steady_clock::time_point at;
    mediator::TurnEvent event;
  };
  std::mutex mu;
  std::vector<Entry> entries;
  void add(const mediator::TurnEvent& e) {
    std::lock_guard lk(mu);
    entries.push_back({std::chrono::steady_clock::now(), e});
  }
};

const char* turn_end_name(mediator::TurnEnd e) {
  switch (e) {
    case mediator::TurnEnd::drained: return "drained";
    case mediator::TurnEnd::out_of_time: return "out of time";
    case mediator::TurnEnd::stopped: return "stopped";
    case mediator::TurnEnd::error: return "error";
    case mediator::TurnEnd::empty: return "empty";
  }
  return "?";
}

// How far before a wait the timeline starts: the turn in progress.
constexpr int TIMELINE_BEFORE_MS = 40;

// The scheduler's part of each of VM0's waits [t0, t1) (in time order),
// in ms: how long turns of `other` overlapped it up to the next start of a
// turn of `own` (the rest of the wait is the host's: the guest's thread
// not run, traps, the model's threads).
using Span = std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>;
struct TurnWaits {
  std::vector<double> ms;  // per sample
  size_t most_turns = 0;   // the most turns of `other` any sample waited for
};
TurnWaits turn_overlaps(TurnLog& log, uint32_t own, uint32_t other, const std::vector<Span>& samples) {
  using Tp = std::chrono::steady_clock::time_point;
  std::vector<Span> turns;
  std::vector<Tp> own_starts;
  {
    std::lock_guard lk(log.mu);
    std::optional<Tp> open;
    for (const auto& [at, e] : log.entries) {
      if (e.vm == own && e.start) own_starts.push_back(at);
      if (e.vm != other) continue;
      if (e.start) {
        open = at;
      } else if (open) {
        turns.emplace_back(*open, at);
        open.reset();
      }
    }
  }
  TurnWaits out;
  size_t first = 0, own_next = 0;
  for (const auto& [t0, t1] : samples) {
    while (first < turns.size() && turns[first].second <= t0) ++first;
    while (own_next < own_starts.size() && own_starts[own_next] <= t0) ++own_next;
    const Tp until = own_next < own_starts.size() ? std::min(t1, own_starts[own_next]) : t1;
    double ms = 0;
    size_t i = first;
    for (; i < turns.size() && turns[i].first < until; ++i)
      ms += std::chrono::duration<double, std::milli>(std::min(until, turns[i].second) - std::max(t0, turns[i].first))
                .count();
    out.ms.push_back(ms);
    out.most_turns = std::max(out.most_turns, i - first);
  }
  return out;
}

double p99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::ranges::sort(v);
  return v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

// The turns from t0 to t1 (ms from t0), one line each.
std::string timeline_between(TurnLog& log, std::chrono::steady_clock::time_point t0,
                             std::chrono::steady_clock::time_point t1) {
  std::lock_guard lk(log.mu);
  std::string out;
  for (const auto& [at, e] : log.entries) {
    if (at < t0 - std::chrono::milliseconds(TIMELINE_BEFORE_MS) || at > t1) continue;
    const double ms = std::chrono::duration<double, std::milli>(at - t0).count();
    out += e.start ? strfmt("    %8.3f ms  vm%u turn starts\n", ms, e.vm)
                   : strfmt("    %8.3f ms  vm%u turn ends (%s, %.3f ms GPU)\n", ms, e.vm, turn_end_name(e.end),
                            static_cast<double>(e.gpu_ns) / 1e6);
  }
  return out;
}

// One LAUNCH_DMA of `lines` 4-byte lines, every line from and to the same
// word (pitch 0): long in lines, small in memory.
Result<driver::Fence> long_copy(driver::Context& ctx, uint32_t lines) {
  auto src = ctx.alloc(sizeof(uint32_t));
  auto dst = ctx.alloc(sizeof(uint32_t));
  if (!src || !dst) return std::unexpected(src ? dst.error() : src.error());
  return ctx.copy_lines(*dst, *src, sizeof(uint32_t), lines, 0, 0);
}

// VM1's long work: its fences, all submitted at once.
Result<std::vector<driver::Fence>> start_long_work(driver::Context& ctx, const std::string& work) {
  std::vector<driver::Fence> fences;
  const auto spin = [&](uint64_t ms) -> Status {
    auto f = ctx.spin({ms * NS_PER_MS});
    if (!f) return std::unexpected(f.error());
    fences.push_back(*f);
    return {};
  };
  Status s;
  if (work == "spin10") {
    s = spin(cls::MAX_SPIN_NS / NS_PER_MS);
  } else if (work == "spins6x3") {
    for (int i = 0; i < 3 && s; ++i) s = spin(6000);
  } else if (work == "copy") {
    auto f = long_copy(ctx, LONG_COPY_LINES);
    if (!f) return std::unexpected(f.error());
    fences.push_back(*f);
  } else {
    return fail(Errc::invalid_argument, "--long-work: '" + work + "' is not one of spin10, spins6x3, copy");
  }
  if (!s) return std::unexpected(s.error());
  return fences;
}

// Two fully virtualized VMs under r's policy, weights and slicing; every
// turn goes to turns.
testbed::TestbedConfig fair_testbed(const FairRun& r, TurnLog& turns) {
  testbed::TestbedConfig tc;
  tc.mode = testbed::Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 64 * MiB;
  tc.scheduler = r.policy;
  tc.weights = {r.weights[0], r.weights[1]};
  tc.slice_blocks = {r.slice_blocks, r.slice_blocks};
  tc.slice_on_demand = r.on_demand;
  tc.on_turn = [&turns](const mediator::TurnEvent& ev) { turns.add(ev); };
  return tc;
}

FairEntry measure(const FairRun& r) {
  FairEntry e{r.policy, r.long_ms, r.slice_blocks};
  e.long_work = r.long_work;
  TurnLog turns;
  auto tb = testbed::Testbed::create(fair_testbed(r, turns));
  if (!tb) {
    e.ok = false;
    e.error = tb.error().what();
    return e;
  }
  using SteadyClock = std::chrono::steady_clock;
  const auto start = SteadyClock::now();
  const auto end = start + std::chrono::seconds(r.seconds);
  std::atomic<bool> long_done{false};
  std::vector<double> waits;
  std::vector<Span> spans;  // of VM0's waits
  SteadyClock::time_point worst_t0, worst_t1;
  uint64_t gpu_at_end[2] = {0, 0};
  auto results = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    if (vm.index == 1 && !r.long_work.empty()) {  // one long operation, then done
      auto fences = start_long_work(**ctx, r.long_work);
      Status s = fences ? Status{} : Status(std::unexpected(fences.error()));
      for (size_t i = 0; s && i < fences->size(); ++i) s = (*ctx)->wait((*fences)[i], LONG_WAIT_NS);
      e.long_work_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
      e.kernels[1] = fences ? fences->size() : 0;
      long_done = true;
      return s;
    }
    const uint64_t ns = uint64_t{vm.index == 0 ? r.short_ms : r.long_ms} * NS_PER_MS;
    const auto going = [&] { return r.long_work.empty() ? SteadyClock::now() < end : !long_done.load(); };
    while (going()) {
      const auto t0 = SteadyClock::now();
      auto f = (*ctx)->spin({ns});
      if (!f) return std::unexpected(f.error());
      if (Status s = (*ctx)->wait(*f); !s) return s;
      if (vm.index == 0) {
        const double waited = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count() -
                              static_cast<double>(r.short_ms);
        waits.push_back(waited);
        spans.emplace_back(t0, SteadyClock::now());
        if (waited > e.worst_wait_ms) {
          e.worst_wait_ms = waited;
          worst_t0 = t0;
          worst_t1 = SteadyClock::now();
        }
      }
      ++e.kernels[vm.index];
    }
    // The shares are those of the window both VMs were busy: VM1's kernel
    // in progress at the end runs on alone (up to --long-ms).
    if (vm.index == 0 && r.long_work.empty())
      for (uint32_t i = 0; i < 2; ++i) gpu_at_end[i] = (*tb)->host()->gpu_ns((*tb)->vgpu(i)->id());
    return {};
  });
  e.wait_samples = waits.size();
  e.p99_wait_ms = p99(waits);
  const TurnWaits by_turns = turn_overlaps(turns, (*tb)->vgpu(0)->id(), (*tb)->vgpu(1)->id(), spans);
  if (!by_turns.ms.empty()) e.worst_turn_wait_ms = std::ranges::max(by_turns.ms);
  e.p99_turn_wait_ms = p99(by_turns.ms);
  e.most_turns_waited = by_turns.most_turns;
  if (r.timeline && e.wait_samples) e.worst_timeline = timeline_between(turns, worst_t0, worst_t1);
  for (uint32_t vm = 0; vm < 2; ++vm) {
    if (!results[vm]) {
      e.ok = false;
      e.error = results[vm].error().what();
    }
    const uint64_t gpu_ns = r.long_work.empty() ? gpu_at_end[vm] : (*tb)->host()->gpu_ns((*tb)->vgpu(vm)->id());
    e.gpu_ms[vm] = static_cast<double>(gpu_ns) / 1e6;
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

bool write_json(const std::string& path, uint32_t short_ms, const uint32_t (&weights)[2], uint32_t seconds,
                double target0, bool on_demand, const std::vector<FairEntry>& entries) {
  nlohmann::ordered_json j = {{"suite", "fair"},      {"slice_on_demand", on_demand},
                              {"short_ms", short_ms}, {"weights", {weights[0], weights[1]}},
                              {"seconds", seconds},   {"results", nlohmann::json::array()}};
  for (const FairEntry& e : entries) {
    const auto vm = [&](uint32_t i, uint32_t kernel_ms, double target) {
      return nlohmann::ordered_json{{"vm", i},
                                    {"kernel_ms", kernel_ms},
                                    {"gpu_ms", e.gpu_ms[i]},
                                    {"share", e.share(i)},
                                    {"target", target},
                                    {"kernels", e.kernels[i]},
                                    {"slice_resumes", e.slice_resumes[i]}};
    };
    j["results"].push_back({{"policy", e.policy},
                            {"long_ms", e.long_ms},
                            {"slice_blocks", slice_name(e.slice_blocks)},
                            {"long_work", e.long_work},
                            {"long_work_s", e.long_work_s},
                            {"distance", std::abs(e.share(0) - target0)},
                            {"vm0_worst_wait_ms", e.worst_wait_ms},
                            {"vm0_p99_wait_ms", e.p99_wait_ms},
                            {"vm0_wait_samples", e.wait_samples},
                            {"vm0_worst_turn_wait_ms", e.worst_turn_wait_ms},
                            {"vm0_p99_turn_wait_ms", e.p99_turn_wait_ms},
                            {"vm0_most_turns_waited", e.most_turns_waited},
                            {"vms", {vm(0, short_ms, target0), vm(1, e.long_ms, 1 - target0)}}});
  }
  return write_json_file("fair", path, j);
}

}  // namespace

int fair_main(std::span<char*> args) {
  std::vector<std::string> policies{"fifo", "credit", "band"}, long_work;
  std::vector<uint32_t> longs{10}, slices{VGPU_OPT_SLICE_BLOCKS_DEFAULT};
  uint32_t short_ms = 1, seconds = 3;
  uint32_t weights[2] = {1, 1};
  std::string json_path;
  bool timeline = false;
  bool on_demand = mediator::HostConfig{}.slice_on_demand;
  if (Status s = parse_flags(
          args,
          {{"--policies", list_flag(policies)},
           {"--short-ms", count_flag("--short-ms", short_ms, 1000)},
           {"--long-ms", parsed_flag(longs, [](std::string_view v) { return parse_counts("--long-ms", v, 1000); })},
           {"--weights", [&weights](std::string_view v) { return parse_weights(v, weights); }},
           {"--slice-blocks",
            parsed_flag(slices, [](std::string_view v) { return parse_option_list(VGPU_OPT_SLICE_BLOCKS, v); })},
           {"--long-work", list_flag(long_work)},
           {"--seconds", count_flag("--seconds", seconds, 600)},
           {"--timeline", on_off_flag("--timeline", timeline)},
           {"--slice-on-demand", on_off_flag("--slice-on-demand", on_demand)},
           {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "fair: " << s.error().message << "\n";
    return 2;
  }
  const double target0 = static_cast<double>(weights[0]) / (weights[0] + weights[1]);
  std::vector<FairEntry> entries;
  std::printf(
      "two fv-opt VMs, spin kernels %u ms (vm0) and the long ms below (vm1), weights %u:%u (vm0 target %.3f), "
      "%u s each; slice 0 = unsliced (a spin block is 100 us), auto = by time (turn-ms/4); worst = vm0's longest "
      "wait (p99, samples), and of it the part vm1's turns took (worst, p99) and the most vm1 turns one wait saw; the rest is the host's\n",
      short_ms, weights[0], weights[1], target0, seconds);
  std::printf("slice-on-demand: %s\n", on_demand ? "on" : "off");
  std::printf("%-7s %9s %6s | %12s %12s | %8s %8s %8s | %9s %8s %6s | %9s %8s %5s | %-13s | %s\n", "policy", "long",
              "slice", "vm0 GPU ms", "vm1 GPU ms", "share0", "share1", "|d|", "worst ms", "p99 ms", "n", "turns ms",
              "p99 ms", "turns", "kernels", "slice resumes");
  std::vector<std::string> works = long_work;
  if (works.empty()) works.emplace_back();
  for (const std::string& work : works) {
    for (uint32_t long_ms : work.empty() ? longs : std::vector<uint32_t>{0}) {
      for (uint32_t slice : slices) {
        for (const std::string& p : policies) {
          FairEntry e = measure(
              {p, short_ms, long_ms, {weights[0], weights[1]}, slice, seconds, work, timeline, on_demand});
          const std::string what = work.empty() ? std::to_string(long_ms) + " ms" : work;
          if (!e.ok)
            std::printf("%-7s %9s %6s | ended: %s\n", p.c_str(), what.c_str(), slice_name(slice).c_str(),
                        e.error.c_str());
          std::printf(
              "%-7s %9s %6s | %12.1f %12.1f | %8.3f %8.3f %8.3f | %9.1f %8.1f %6zu | %9.1f %8.1f %5zu | %5lu / %-5lu | %lu / "
              "%lu%s\n",
              p.c_str(), what.c_str(), slice_name(slice).c_str(), e.gpu_ms[0], e.gpu_ms[1], e.share(0), e.share(1),
              std::abs(e.share(0) - target0), e.worst_wait_ms, e.p99_wait_ms, e.wait_samples, e.worst_turn_wait_ms,
              e.p99_turn_wait_ms, e.most_turns_waited, e.kernels[0], e.kernels[1], e.slice_resumes[0],
              e.slice_resumes[1], work.empty() ? "" : strfmt(" (vm1 done after %.1f s)", e.long_work_s).c_str());
          if (!e.worst_timeline.empty()) std::printf("  vm0's worst wait, the turns:\n%s", e.worst_timeline.c_str());
          std::fflush(stdout);
          if (!e.ok && work.empty()) return 1;
          entries.push_back(e);
        }
      }
    }
  }
  if (!json_path.empty() && !write_json(json_path, short_ms, weights, seconds, target0, on_demand, entries)) return 1;
  return 0;
}

}  // namespace vgpu::bench
