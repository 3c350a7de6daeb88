// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl plot's figures (docs/vgpud.md): the daemon's `shares` samples
// reduced to what a person reads at a glance. Per VM, per sampling window:
// its share of the GPU time all VMs used in the window (dots), a rolling
// share over the last few windows (a line: GPU time over GPU time, not a
// mean of ratios) and the target its weight gives it among the VMs that
// used the GPU in that span (dashed). A window in which no VM used the GPU
// is a gap, not a zero. The gnuplot script puts the scheduler and weights
// in the title and legend and leaves a margin around [0, 1].
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vgpu::vgpud::share_plot {

struct VmSample {
  uint64_t gpu_ns = 0;  // the VM's GPU time so far
  uint32_t weight = 0;
};

// One answer of the control socket's `shares`: "time_ns scheduler", then
// "name gpu_ns weight" per VM.
struct Sample {
  uint64_t t_ns = 0;
  std::string scheduler;
  std::map<std::string, VmSample> vms;
};
[[nodiscard]] std::optional<Sample> parse_shares(const std::string& answer);

// One VM's series, one value per window; NaN is a gap.
struct Series {
  std::string name;
  uint32_t weight = 0;  // the last one seen
  std::vector<double> window, rolling, target;
  double run_share = 0;  // its GPU time over all VMs' in the whole run
};

struct Figures {
  std::string scheduler;
  size_t rolling_windows = 0;
  std::vector<double> t_s;  // each window's end, seconds after the first sample
  std::vector<Series> vms;  // by name
  uint32_t weight_sum = 0;  // of the VMs in the run, last weights
};

// Windows between consecutive samples; the rolling share spans
// `rolling_windows` of them.
[[nodiscard]] Figures reduce(const std::vector<Sample>& samples, size_t rolling_windows);
// Columns: t_s, then per VM window, rolling and target ("NaN" for gaps).
[[nodiscard]] std::string data_file(const Figures& f);
[[nodiscard]] std::string gnuplot_script(const Figures& f, const std::string& dat, const std::string& png,
                                         double window_s);

}  // namespace vgpu::vgpud::share_plot
