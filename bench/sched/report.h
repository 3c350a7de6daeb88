// SPDX-License-Identifier: GPL-2.0-or-later
// Output of the scheduler experiments: a table, JSON, and gnuplot figures.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "bench/sched/experiments.h"
#include "vgpu/options.h"

namespace vgpu::bench {

struct RunInfo {
  sched::PolicyParams params;
  uint64_t duration_ns = 0;
  uint64_t gap_ns = 0;
  // Kernels run as turns of at most this (0: whole); by default the
  // stack's own default slice, turn-ms / VGPU_OPT_SLICE_TURN_FRACTION.
  uint64_t slice_ns = uint64_t{VGPU_OPT_TURN_MS_DEFAULT} * 1'000'000 / VGPU_OPT_SLICE_TURN_FRACTION;
};

void print_table(std::ostream& out, const std::vector<Figures>& all);
[[nodiscard]] Status write_json(const std::string& path, const RunInfo& info, const std::vector<Experiment>& exps,
                                const std::vector<Figures>& all);
// Writes <dir>/<experiment>-<policy>.dat and <dir>/<experiment>.gp, and runs
// gnuplot on each script when it is installed (a message otherwise).
[[nodiscard]] Status write_plots(const std::string& dir, const std::vector<Experiment>& exps,
                                 const std::vector<std::string>& policies, const std::vector<Figures>& all,
                                 std::ostream& log);

}  // namespace vgpu::bench
