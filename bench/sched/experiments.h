// SPDX-License-Identifier: GPL-2.0-or-later
// The scheduler experiments of issue 5 and the figures computed from a
// simulation: shares, target shares, Jain's index, utilization, latency.
#pragma once

#include <string>
#include <vector>

#include "bench/sched/sim.h"

namespace vgpu::bench {

struct Experiment {
  std::string name;
  std::string about;
  std::vector<SimVm> vms;
  bool checked = false;  // BAND must meet the acceptance bounds here
};

std::vector<Experiment> experiments();

struct VmFigures {
  SimVm vm;  // the experiment's VM: weight, kernel and think time
  double target_share = 0;
  double share = 0;
  double latency_p50_ms = 0;
  double latency_p99_ms = 0;
  size_t kernels = 0;
};

struct Figures {
  std::string experiment;
  std::string policy;
  double utilization = 0;
  double jain = 0;
  std::vector<VmFigures> vms;
  std::vector<std::vector<double>> share_over_time;  // [sample][vm]
  double sample_s = 0;
};

// Max-min fair target shares by weight, where a VM that thinks between
// kernels demands at most kernel / (kernel + think) of the engine.
std::vector<double> target_shares(const std::vector<SimVm>& vms);
double jain_index(const std::vector<double>& x);
Figures figures(const Experiment& e, const SimConfig& config, const SimResult& r);

// BAND's acceptance bounds.
constexpr double MAX_SHARE_ERROR = 0.03;
constexpr double MIN_JAIN = 0.98;
constexpr double MIN_UTILIZATION = 0.95;
[[nodiscard]] bool meets_bounds(const Figures& f, std::string* why);

}  // namespace vgpu::bench
