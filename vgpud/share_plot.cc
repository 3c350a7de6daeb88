// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/share_plot.h"

#include <array>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/text.h"

namespace vgpu::vgpud::share_plot {
namespace {

constexpr double GAP = std::numeric_limits<double>::quiet_NaN();
// Line colours, one per VM in name order (then again); the window dots
// are the same colour, mostly transparent (gnuplot's #AARRGGBB, AA 0 opaque).
constexpr std::array<const char*, 6> COLOURS{"1f77b4", "d62728", "2ca02c", "9467bd", "ff7f0e", "8c564b"};
constexpr const char* DOT_ALPHA = "b0";
constexpr double Y_MARGIN = 0.05;  // around [0, 1], so 0 and 1 do not lie on the frame

double ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? GAP : static_cast<double>(part) / static_cast<double>(whole);
}

std::string value(double v) { return std::isnan(v) ? "NaN" : strfmt("%.4f", v); }

// gnuplot single-quoted text: a quote is doubled.
std::string quoted(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  for (const char c : s) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

}  // namespace

std::optional<Sample> parse_shares(const std::string& answer) {
  std::istringstream in(answer);
  std::string line;
  Sample s;
  if (!std::getline(in, line)) return std::nullopt;
  std::istringstream head(line);
  if (!(head >> s.t_ns)) return std::nullopt;
  head >> s.scheduler;  // absent from an older daemon
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string name;
    VmSample v;
    if (!(row >> name >> v.gpu_ns)) return std::nullopt;
    row >> v.weight;
    s.vms[name] = v;
  }
  return s;
}

Figures reduce(const std::vector<Sample>& samples, size_t rolling_windows) {
  Figures f;
  f.rolling_windows = rolling_windows == 0 ? 1 : rolling_windows;
  if (samples.empty()) return f;
  f.scheduler = samples.back().scheduler;
  std::map<std::string, size_t> index;
  for (const Sample& s : samples)
    for (const auto& [name, v] : s.vms) index.emplace(name, 0);
  for (auto& [name, at] : index) {
    at = f.vms.size();
    f.vms.push_back(Series{.name = name});
  }
  for (const Sample& s : samples)
    for (const auto& [name, v] : s.vms) f.vms[index[name]].weight = v.weight;
  for (const Series& v : f.vms) f.weight_sum += v.weight;

  const size_t windows = samples.size() - 1, n = f.vms.size();
  std::vector<std::vector<uint64_t>> used(windows, std::vector<uint64_t>(n, 0));
  std::vector<std::vector<uint32_t>> weight(windows, std::vector<uint32_t>(n, 0));
  std::vector<std::vector<bool>> present(windows, std::vector<bool>(n, false));
  std::vector<uint64_t> all(windows, 0);
  for (size_t w = 0; w < windows; ++w) {
    const Sample &before = samples[w], &now = samples[w + 1];
    f.t_s.push_back(static_cast<double>(now.t_ns - samples.front().t_ns) / 1e9);
    for (const auto& [name, v] : now.vms) {
      const size_t i = index[name];
      auto prev = before.vms.find(name);
      const uint64_t start = prev == before.vms.end() ? 0 : prev->second.gpu_ns;
      used[w][i] = v.gpu_ns >= start ? v.gpu_ns - start : 0;
      weight[w][i] = v.weight;
      present[w][i] = true;
      all[w] += used[w][i];
    }
  }
  uint64_t run_all = 0;
  std::vector<uint64_t> run_used(n, 0);
  for (size_t w = 0; w < windows; ++w) {
    const size_t first = w + 1 >= f.rolling_windows ? w + 1 - f.rolling_windows : 0;
    uint64_t span_all = 0, active_weights = 0;
    std::vector<uint64_t> span(n, 0);
    for (size_t u = first; u <= w; ++u) {
      span_all += all[u];
      for (size_t i = 0; i < n; ++i) span[i] += used[u][i];
    }
    for (size_t i = 0; i < n; ++i)
      if (present[w][i] && span[i] > 0) active_weights += weight[w][i];
    for (size_t i = 0; i < n; ++i) {
      Series& v = f.vms[i];
      const bool active = present[w][i] && span[i] > 0;
      v.window.push_back(present[w][i] ? ratio(used[w][i], all[w]) : GAP);
      v.rolling.push_back(present[w][i] ? ratio(span[i], span_all) : GAP);
      v.target.push_back(active ? ratio(weight[w][i], active_weights) : GAP);
      run_used[i] += used[w][i];
    }
    run_all += all[w];
  }
  for (size_t i = 0; i < n; ++i) f.vms[i].run_share = run_all ? ratio(run_used[i], run_all) : 0;
  return f;
}

std::string data_file(const Figures& f) {
  std::string out = "# t_s";
  for (const Series& v : f.vms)
    out += strfmt(" %s.window %s.rolling %s.target", v.name.c_str(), v.name.c_str(), v.name.c_str());
  out += "\n";
  for (size_t w = 0; w < f.t_s.size(); ++w) {
    out += strfmt("%.3f", f.t_s[w]);
    for (const Series& v : f.vms)
      out += strfmt(" %s %s %s", value(v.window[w]).c_str(), value(v.rolling[w]).c_str(), value(v.target[w]).c_str());
    out += "\n";
  }
  return out;
}

std::string gnuplot_script(const Figures& f, const std::string& dat, const std::string& png, double window_s) {
  std::string weights;
  for (const Series& v : f.vms) weights += strfmt("%s%s %u", weights.empty() ? "" : ", ", v.name.c_str(), v.weight);
  const std::string title =
      strfmt("GPU share per VM: vgpud scheduler %s; weights %s\\n", f.scheduler.empty() ? "?" : f.scheduler.c_str(),
             weights.empty() ? "none" : weights.c_str()) +
      strfmt("lines: share over the last %.1f s; dots: %.0f ms windows; dashed: the weights' target; gaps: GPU idle",
             window_s * static_cast<double>(f.rolling_windows), window_s * 1000);
  std::string g = "set terminal pngcairo size 1000,600 noenhanced font ',10'\nset output " + quoted(png) + "\n";
  g += "set title \"" + title + "\"\n";
  g += strfmt("set yrange [%.2f:%.2f]\nset ytics 0,0.25,1\nset grid ytics\n", -Y_MARGIN, 1 + Y_MARGIN);
  g += "set xlabel 'time (s)'\nset ylabel 'share of the GPU time used by all VMs'\n";
  g += "set key below maxrows 2\nset autoscale xfix\n";
  if (f.vms.empty()) return g + "plot 0.5 title 'no VMs'\n";
  g += "plot ";
  for (size_t i = 0; i < f.vms.size(); ++i) {
    const Series& v = f.vms[i];
    const char* colour = COLOURS[i % COLOURS.size()];
    const size_t col = 2 + 3 * i;  // window, rolling, target
    const std::string target = f.weight_sum ? strfmt("%u/%u = %.3f", v.weight, f.weight_sum,
                                                     static_cast<double>(v.weight) / f.weight_sum)
                                            : std::string("?");
    g += strfmt("%s%s using 1:%zu with points pt 7 ps 0.5 lc rgb '#%s%s' notitle, ", i ? ", " : "", quoted(dat).c_str(),
                col, DOT_ALPHA, colour);
    g += strfmt("'' using 1:%zu with lines lw 2.5 lc rgb '#%s' title %s, ", col + 1, colour,
                quoted(strfmt("%s (weight %u): %.3f over the run", v.name.c_str(), v.weight, v.run_share)).c_str());
    g += strfmt("'' using 1:%zu with lines dt 2 lw 1.5 lc rgb '#%s' title %s", col + 2, colour,
                quoted(v.name + " target, every VM busy: " + target).c_str());
  }
  return g + "\n";
}

}  // namespace vgpu::vgpud::share_plot
