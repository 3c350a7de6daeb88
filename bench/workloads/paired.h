// SPDX-License-Identifier: GPL-2.0-or-later
// Comparing two modes whose difference may be below the run-to-run
// spread: the ratio of their medians with a bootstrap confidence interval
// over fresh instances (each instance's median is one sample, so an
// instance's placement in memory counts as the noise it is).
#pragma once

#include <cstdint>
#include <vector>

namespace vgpu::bench {

struct RatioCi {
  double ratio = 0;  // median(a) / median(b): b's speed relative to a's for equal work
  double low = 0;    // alpha/2 quantile of the bootstrap
  double high = 0;   // 1 - alpha/2 quantile
};

// a, b: per-instance median times of the two modes (at least one each).
// The interval holds 1 - alpha of the bootstrap (alpha 0.05: 95%; for a
// claim about k comparisons at once, alpha 0.05 / k: Bonferroni).
// Deterministic: the resampling uses a fixed seed.
[[nodiscard]] RatioCi bootstrap_speed_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                            double alpha = 0.05, uint32_t resamples = 20000);

// a[i] and b[i] measured side by side (round i of an interleaved run): the
// median of the per-round ratios a[i] / b[i], with a bootstrap interval
// over the rounds. A drift of the host's speed between rounds falls on
// both members of a pair and cancels. Ratio 0 when the sizes differ or
// a round has a zero time.
[[nodiscard]] RatioCi bootstrap_paired_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                             double alpha = 0.05, uint32_t resamples = 20000);

}  // namespace vgpu::bench
