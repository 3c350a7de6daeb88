// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl plot: each VM's share of the GPU time per 250 ms window, drawn
// by gnuplot.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "vgpud/vgpuctl.h"

namespace vgpu::vgpuctl {

int plot(const Target& target, double seconds, const std::string& png) {
  constexpr auto WINDOW = std::chrono::milliseconds(250);
  std::vector<Shares> samples;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto next = std::chrono::steady_clock::now();
  while (next <= end) {
    auto s = shares(target);
    if (!s) {
      std::fprintf(stderr, "vgpuctl: %s\n", s.error().message.c_str());
      return 1;
    }
    samples.push_back(std::move(*s));
    next += WINDOW;
    std::this_thread::sleep_until(next);
  }
  std::map<std::string, int> column;
  for (const Shares& s : samples)
    for (const auto& [name, ns] : s.gpu_ns) column.emplace(name, 0);
  int c = 2;
  for (auto& [name, col] : column) col = c++;
  const std::string dat = png + ".dat";
  std::ofstream out(dat);
  out << "# t_s";
  for (const auto& [name, col] : column) out << ' ' << name;
  out << '\n';
  for (size_t i = 1; i < samples.size(); ++i) {
    uint64_t all = 0;
    std::map<std::string, uint64_t> used;
    for (const auto& [name, ns] : samples[i].gpu_ns) {
      auto prev = samples[i - 1].gpu_ns.find(name);
      const uint64_t before = prev == samples[i - 1].gpu_ns.end() ? 0 : prev->second;
      used[name] = ns >= before ? ns - before : 0;
      all += used[name];
    }
    out << static_cast<double>(samples[i].t - samples[0].t) / 1e9;
    for (const auto& [name, col] : column)
      out << ' ' << (all ? static_cast<double>(used[name]) / static_cast<double>(all) : 0.0);
    out << '\n';
  }
  out.close();
  const std::string gp = png + ".gp";
  std::ofstream g(gp);
  g << "set terminal png size 900,400\nset output '" << png << "'\nset yrange [0:1]\nset xlabel 'time (s)'\n"
    << "set ylabel 'share of GPU time (250 ms windows)'\nset key outside\nplot ";
  bool first = true;
  for (const auto& [name, col] : column) {
    g << (first ? "" : ", ") << "'" << dat << "' using 1:" << col << " with lines title '" << name << "'";
    first = false;
  }
  if (column.empty()) g << "0 title 'no VMs'";
  g << '\n';
  g.close();
  const std::string cmd = "gnuplot '" + gp + "'";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "vgpuctl: gnuplot failed or is missing; the data is in %s\n", dat.c_str());
    return 1;
  }
  std::printf("%s (%zu samples, data in %s)\n", png.c_str(), samples.size(), dat.c_str());
  return 0;
}

}  // namespace vgpu::vgpuctl
