// SPDX-License-Identifier: GPL-2.0-or-later
#include "bench/sched/report.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cstdarg>
#include <fstream>

#include <nlohmann/json.hpp>

namespace vgpu::bench {
namespace {

// printf into a std::string (g++ 12 has no <format>).
[[gnu::format(printf, 1, 2)]] std::string strf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return std::string(buf, static_cast<size_t>(std::max(0, std::min(n, static_cast<int>(sizeof buf) - 1))));
}

const Figures* find(const std::vector<Figures>& all, const std::string& exp, const std::string& policy) {
  for (const auto& f : all)
    if (f.experiment == exp && f.policy == policy) return &f;
  return nullptr;
}

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

}  // namespace

void print_table(std::ostream& out, const std::vector<Figures>& all) {
  std::string last;
  for (const auto& f : all) {
    if (f.experiment != last) {
      out << "\n" << f.experiment << "\n";
      out << strf("  %-7s %6s %6s  %3s %3s %7s %7s %7s %9s %9s\n", "policy", "util", "jain", "vm", "w", "kern_ms",
                  "target", "share", "p50_ms", "p99_ms");
      last = f.experiment;
    }
    for (size_t i = 0; i < f.vms.size(); ++i) {
      const auto& v = f.vms[i];
      const std::string head = i == 0 ? strf("  %-7s %6.3f %6.3f", f.policy.c_str(), f.utilization, f.jain)
                                      : strf("  %-7s %6s %6s", "", "", "");
      out << head
          << strf("  %3zu %3u %7.2f %7.3f %7.3f %9.2f %9.2f\n", i, v.vm.weight, ms(v.vm.kernel_ns), v.target_share,
                  v.share, v.latency_p50_ms, v.latency_p99_ms);
    }
  }
}

Status write_json(const std::string& path, const RunInfo& info, const std::vector<Experiment>& exps,
                  const std::vector<Figures>& all) {
  std::ofstream out(path);
  if (!out) return fail(Errc::io_error, "cannot write " + path);
  nlohmann::ordered_json j = {{"suite", "sched"},
                              {"time", "virtual"},
                              {"duration_s", static_cast<double>(info.duration_ns) / 1e9},
                              {"submit_gap_us", static_cast<double>(info.gap_ns) / 1e3},
                              {"params",
                               {{"period_ms", static_cast<double>(info.params.period_ns) / 1e6},
                                {"yield_window_us", static_cast<double>(info.params.yield_window_ns) / 1e3},
                                {"credit_limit_ms", static_cast<double>(info.params.credit_limit()) / 1e6},
                                {"util_interval_ms", static_cast<double>(info.params.util_interval_ns) / 1e6},
                                {"yield_ends_when_all_queued", info.params.yield_ends_when_all_queued}}},
                              {"experiments", nlohmann::json::array()}};
  for (const auto& f : all) {
    std::string about;
    bool checked = false;
    for (const auto& e : exps)
      if (e.name == f.experiment) {
        about = e.about;
        checked = e.checked;
      }
    nlohmann::ordered_json vms = nlohmann::json::array();
    for (size_t i = 0; i < f.vms.size(); ++i) {
      const auto& v = f.vms[i];
      vms.push_back({{"vm", i},
                     {"weight", v.vm.weight},
                     {"kernel_ms", ms(v.vm.kernel_ns)},
                     {"think_ms", ms(v.vm.think_ns)},
                     {"target_share", v.target_share},
                     {"share", v.share},
                     {"latency_p50_ms", v.latency_p50_ms},
                     {"latency_p99_ms", v.latency_p99_ms},
                     {"kernels", v.kernels}});
    }
    j["experiments"].push_back({{"name", f.experiment},
                                {"about", about},
                                {"policy", f.policy},
                                {"utilization", f.utilization},
                                {"jain", f.jain},
                                {"band_bounds_apply", checked},
                                {"within_band_bounds", meets_bounds(f, nullptr)},
                                {"vms", std::move(vms)}});
  }
  out << j.dump(2) << "\n";
  if (!out) return fail(Errc::io_error, "write to " + path + " failed");
  return {};
}

Status write_plots(const std::string& dir, const std::vector<Experiment>& exps,
                   const std::vector<std::string>& policies, const std::vector<Figures>& all, std::ostream& log) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "cannot create plot folder " + dir + ": " + ec.message());
  const bool gnuplot = have_gnuplot();
  if (!gnuplot) log << "sched_bench: gnuplot not found; data and .gp scripts written to " << dir << ", no PNGs\n";
  for (const auto& e : exps) {
    for (const auto& p : policies) {
      const Figures* f = find(all, e.name, p);
      if (!f) continue;
      std::ofstream dat(dir + "/" + e.name + "-" + p + ".dat");
      dat << "# time_s share_vm0 share_vm1 ...\n";
      for (size_t s = 0; s < f->share_over_time.size(); ++s) {
        dat << strf("%.3f", (static_cast<double>(s) + 0.5) * f->sample_s);
        for (double v : f->share_over_time[s]) dat << strf(" %.4f", v);
        dat << "\n";
      }
    }
    const auto targets = target_shares(e.vms);
    const std::string gp_path = dir + "/" + e.name + ".gp";
    std::ofstream gp(gp_path);
    gp << "# Share of GPU time per VM over time, one panel per policy (sched_bench).\n";
    gp << strf("set terminal pngcairo size 1000,%zu font ',10'\n", 280 * policies.size());
    gp << "set output '" << e.name << ".png'\n";
    gp << strf("set multiplot layout %zu,1 title '%s'\n", policies.size(), e.about.c_str());
    gp << "set yrange [0:1]\nset ylabel 'share'\nset key outside right\nset grid\n";
    for (const auto& p : policies) {
      gp << "set title '" << p << "'\nset xlabel 'virtual time (s)'\n";
      gp << "plot ";
      for (size_t i = 0; i < e.vms.size(); ++i) {
        gp << strf("'%s-%s.dat' using 1:%zu with lines lw 2 lc %zu title 'vm%zu w%u %.2f ms', ", e.name.c_str(),
                   p.c_str(), i + 2, i + 1, i, e.vms[i].weight, ms(e.vms[i].kernel_ns));
        gp << strf("%.4f with lines dt 2 lc %zu notitle", targets[i], i + 1);
        gp << (i + 1 < e.vms.size() ? ", " : "\n");
      }
    }
    gp << "unset multiplot\n";
    gp.close();
    if (gnuplot) {
      const std::string cmd = "cd '" + dir + "' && gnuplot '" + e.name + ".gp'";
      if (std::system(cmd.c_str()) != 0) log << "sched_bench: gnuplot failed on " << gp_path << "\n";
    }
  }
  return {};
}

}  // namespace vgpu::bench
