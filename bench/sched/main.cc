// SPDX-License-Identifier: GPL-2.0-or-later
// sched_bench: FIFO, CREDIT and BAND on the issue-5 experiments, in virtual
// time. Flags through CLI11 (--opt value or --opt=value; usage errors exit
// 2; --help, --version). Usage:
//   sched_bench [--json FILE] [--plots DIR] [--seconds S] [--gap-us US]
//               [--period-ms MS] [--yield-us US] [--util-interval-ms MS]
//               [--slice-ms MS] [--early-yield-end] [--check]
// --slice-ms: kernels run as turns of at most MS (default 7.5, the stack's
// default slice, turn-ms / 4; 0: whole).
// --check exits 1 when BAND misses its bounds in a checked experiment.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench/sched/report.h"

namespace {

using namespace vgpu;
using namespace vgpu::bench;

constexpr int EXIT_USAGE = 2;

// A non-negative number, all of the text, times `unit` into *dst (ns).
CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        double d = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size() || d < 0)
          return "'" + v + "' is not a non-negative number";
        return "";
      },
      "NUMBER");
}

void add_time(CLI::App& app, const std::string& name, double unit, uint64_t* dst, const std::string& help) {
  app.add_option_function<std::string>(
         name,
         [unit, dst](const std::string& v) { *dst = static_cast<uint64_t>(std::strtod(v.c_str(), nullptr) * unit); },
         help)
      ->type_name("NUMBER")
      ->check(non_negative());
}

// Every experiment under every policy.
Result<std::vector<Figures>> run_all(const RunInfo& info, const std::vector<Experiment>& exps,
                                     const std::vector<std::string>& policies) {
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
      if (!r) return std::unexpected(r.error().context(e.name + " " + p));
      all.push_back(figures(e, config, *r));
    }
  }
  return all;
}

// BAND's bounds in the checked experiments, each said.
bool band_meets_bounds(const std::vector<Experiment>& exps, const std::vector<Figures>& all) {
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
  return band_ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path, plot_dir;
  bool check = false;
  RunInfo info;
  info.duration_ns = 20'000'000'000;
  info.params.turn_ns = uint64_t{VGPU_OPT_TURN_MS_DEFAULT} * 1'000'000;
  info.gap_ns = 20'000;
  CLI::App app("sched_bench: FIFO, CREDIT and BAND on the issue-5 experiments, in virtual time", "sched_bench");
  app.add_option("--json", json_path, "write the figures as JSON to FILE")->type_name("FILE");
  app.add_option("--plots", plot_dir, "write gnuplot plots into DIR")->type_name("DIR");
  add_time(app, "--seconds", 1e9, &info.duration_ns, "virtual seconds per experiment (default 20)");
  add_time(app, "--gap-us", 1e3, &info.gap_ns, "submit gap in microseconds (default 20)");
  add_time(app, "--period-ms", 1e6, &info.params.period_ns, "the policies' period in milliseconds");
  add_time(app, "--yield-us", 1e3, &info.params.yield_window_ns, "BAND's yield window in microseconds");
  add_time(app, "--util-interval-ms", 1e6, &info.params.util_interval_ns, "utilization interval in milliseconds");
  add_time(app, "--slice-ms", 1e6, &info.slice_ns, "kernels sliced into pieces of this many milliseconds");
  add_time(app, "--turn-ms", 1e6, &info.params.turn_ns,
           "with slicing, BAND's weighted turns within turns of this many milliseconds (default 30; 0: Gdev's BAND, "
           "a turn of one piece)");
  app.add_flag("--early-yield-end", info.params.yield_ends_when_all_queued, "end BAND's yield when all VMs queued");
  app.add_flag("--check", check, "exit 1 when BAND misses its bounds in a checked experiment");
  app.set_version_flag("--version", std::string("sched_bench (vgpu) ") + VGPU_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "sched_bench: " << e.what() << " (see --help)\n";
    return EXIT_USAGE;
  }
  if (info.slice_ns == 0) info.params.turn_ns = 0;  // whole kernels: one kernel a turn

  const std::vector<std::string> policies{"fifo", "credit", "band"};
  const auto exps = experiments();
  auto all = run_all(info, exps, policies);
  if (!all) {
    std::cerr << "sched_bench: " << all.error().what() << "\n";
    return 1;
  }
  std::cout << "scheduler experiments, " << static_cast<double>(info.duration_ns) / 1e9
            << " s of virtual time each, submit gap " << static_cast<double>(info.gap_ns) / 1e3 << " us, kernels "
            << (info.slice_ns
                    ? "sliced into pieces of " + std::to_string(static_cast<double>(info.slice_ns) / 1e6) + " ms" +
                          (info.params.turn_ns
                               ? ", BAND's weighted turns of up to " +
                                     std::to_string(static_cast<double>(info.params.turn_ns) / 1e6) + " ms"
                               : std::string(", a turn a piece"))
                    : std::string("unsliced"))
            << "\n";
  print_table(std::cout, *all);

  const bool band_ok = band_meets_bounds(exps, *all);
  if (!json_path.empty()) {
    if (auto st = write_json(json_path, info, exps, *all); !st) {
      std::cerr << "sched_bench: " << st.error().what() << "\n";
      return 1;
    }
    std::cout << "json: " << json_path << "\n";
  }
  if (!plot_dir.empty()) {
    if (auto st = write_plots(plot_dir, exps, policies, *all, std::cerr); !st) {
      std::cerr << "sched_bench: " << st.error().what() << "\n";
      return 1;
    }
    std::cout << "plots: " << plot_dir << "\n";
  }
  return check && !band_ok ? 1 : 0;
}
