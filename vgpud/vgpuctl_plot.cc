// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl plot: each VM's share of the GPU time, rolling over 2 s and per
// 250 ms window, beside the target its weight gives it, drawn by gnuplot
// (the figures: vgpud/share_plot.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "vgpud/share_plot.h"
#include "vgpud/vgpuctl.h"

namespace vgpu::vgpuctl {

namespace share_plot = vgpud::share_plot;

int plot(const Target& target, double seconds, const std::string& png) {
  constexpr auto WINDOW = std::chrono::milliseconds(250);
  constexpr size_t ROLLING_WINDOWS = 8;  // the line: the share over the last 2 s
  std::vector<share_plot::Sample> samples;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto next = std::chrono::steady_clock::now();
  while (next <= end) {
    auto s = shares(target);
    if (!s) {
      std::fprintf(stderr, "vgpuctl: %s\n", s.error().message.c_str());
      return EXIT_FAILED;
    }
    samples.push_back(std::move(*s));
    next += WINDOW;
    std::this_thread::sleep_until(next);
  }
  const share_plot::Figures f = share_plot::reduce(samples, ROLLING_WINDOWS);
  const std::string dat = png + ".dat", gp = png + ".gp";
  std::ofstream(dat) << share_plot::data_file(f);
  std::ofstream(gp) << share_plot::gnuplot_script(f, dat, png, std::chrono::duration<double>(WINDOW).count());
  const std::string cmd = "gnuplot '" + gp + "'";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "vgpuctl: gnuplot failed or is missing; the data is in %s\n", dat.c_str());
    return EXIT_FAILED;
  }
  std::printf("%s (%zu samples, scheduler %s", png.c_str(), samples.size(), f.scheduler.c_str());
  for (const share_plot::Series& v : f.vms)
    std::printf(", %s weight %u share %.3f", v.name.c_str(), v.weight, v.run_share);
  std::printf("; data in %s)\n", dat.c_str());
  return 0;
}

}  // namespace vgpu::vgpuctl
