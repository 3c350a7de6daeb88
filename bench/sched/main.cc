// SPDX-License-Identifier: GPL-2.0-or-later
// sched_bench: FIFO, CREDIT and BAND on the issue-5 experiments, in virtual
// time. Usage:
//   sched_bench [--json FILE] [--plots DIR] [--seconds S] [--gap-us US]
//               [--period-ms MS] [--yield-us US] [--util-interval-ms MS]
//               [--slice-ms MS] [--early-yield-end] [--check]
// --slice-ms: kernels run as turns of at most MS (default 7.5, the stack's
// default slice, turn-ms / 4; 0: whole).
// --check exits 1 when BAND misses its bounds in a checked experiment.
#include <charconv>
#include <iostream>
#include <string>
#include <vector>

#include "bench/sched/report.h"

namespace {

using namespace vgpu;
using namespace vgpu::bench;

bool parse_double(const char* s, double* out) {
  const std::string str(s);
  auto [p, ec] = std::from_chars(str.data(), str.data() + str.size(), *out);
  return ec == std::errc() && p == str.data() + str.size() && *out >= 0;
}

uint64_t ns(double v, double unit) { return static_cast<uint64_t>(v * unit); }

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, plot_dir;
  bool check = false;
  RunInfo info;
  info.duration_ns = 20'000'000'000;
  info.gap_ns = 20'000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    double v = 0;
    auto number = [&](double unit, uint64_t* dst) {
      if (!has_value || !parse_double(argv[i + 1], &v)) {
        std::cerr << "sched_bench: " << a << " needs a non-negative number\n";
        return false;
      }
      *dst = ns(v, unit);
      ++i;
      return true;
    };
    if (a == "--json" && has_value) {
      json_path = argv[++i];
    } else if (a == "--plots" && has_value) {
      plot_dir = argv[++i];
    } else if (a == "--seconds") {
      if (!number(1e9, &info.duration_ns)) return 2;
    } else if (a == "--gap-us") {
      if (!number(1e3, &info.gap_ns)) return 2;
    } else if (a == "--period-ms") {
      if (!number(1e6, &info.params.period_ns)) return 2;
    } else if (a == "--yield-us") {
      if (!number(1e3, &info.params.yield_window_ns)) return 2;
    } else if (a == "--util-interval-ms") {
      if (!number(1e6, &info.params.util_interval_ns)) return 2;
    } else if (a == "--slice-ms") {
      if (!number(1e6, &info.slice_ns)) return 2;
    } else if (a == "--early-yield-end") {
      info.params.yield_ends_when_all_queued = true;
    } else if (a == "--check") {
      check = true;
    } else {
      std::cerr << "sched_bench: unknown or incomplete argument '" << a << "'\n"
                << "usage: sched_bench [--json FILE] [--plots DIR] [--seconds S] [--gap-us US] [--period-ms MS]\n"
                   "                   [--yield-us US] [--util-interval-ms MS] [--slice-ms MS] [--early-yield-end]\n"
                   "                   [--check]\n";
      return 2;
    }
  }

  const std::vector<std::string> policies{"fifo", "credit", "band"};
  const auto exps = experiments();
  std::vector<Figures> all;
  for (const auto& e : exps) {
    for (const auto& p : policies) {
      SimConfig config{.policy = p,
                       .params = info.params,
                       .vms = e.vms,
                       .duration_ns = info.duration_ns,
                       .gap_ns = info.gap_ns,
                       .slice_ns = info.slice_ns};
      auto r = simulate(config);
      if (!r) {
        std::cerr << "sched_bench: " << e.name << " " << p << ": " << r.error().what() << "\n";
        return 1;
      }
      all.push_back(figures(e, config, *r));
    }
  }
  std::cout << "scheduler experiments, " << static_cast<double>(info.duration_ns) / 1e9
            << " s of virtual time each, submit gap " << static_cast<double>(info.gap_ns) / 1e3 << " us, kernels "
            << (info.slice_ns
                    ? "sliced into turns of " + std::to_string(static_cast<double>(info.slice_ns) / 1e6) + " ms"
                    : std::string("unsliced"))
            << "\n";
  print_table(std::cout, all);

  bool band_ok = true;
  std::cout << "\nBAND bounds (share within 3 pp of target, jain >= 0.98, utilization >= 0.95):\n";
  for (const auto& e : exps) {
    if (!e.checked) continue;
    for (const auto& f : all) {
      if (f.experiment != e.name || f.policy != "band") continue;
      std::string why;
      const bool ok = meets_bounds(f, &why);
      band_ok = band_ok && ok;
      std::cout << "  " << e.name << ": " << (ok ? "met" : "MISSED:" + why) << "\n";
    }
  }
  if (!json_path.empty()) {
    if (auto st = write_json(json_path, info, exps, all); !st) {
      std::cerr << "sched_bench: " << st.error().what() << "\n";
      return 1;
    }
    std::cout << "json: " << json_path << "\n";
  }
  if (!plot_dir.empty()) {
    if (auto st = write_plots(plot_dir, exps, policies, all, std::cerr); !st) {
      std::cerr << "sched_bench: " << st.error().what() << "\n";
      return 1;
    }
    std::cout << "plots: " << plot_dir << "\n";
  }
  return check && !band_ok ? 1 : 0;
}
