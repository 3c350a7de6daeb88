// SPDX-License-Identifier: GPL-2.0-or-later
#include "bench/workloads/paired.h"

#include <algorithm>
#include <random>

namespace vgpu::bench {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<double> resample(const std::vector<double>& v, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
  std::vector<double> out(v.size());
  for (double& x : out) x = v[pick(rng)];
  return out;
}

RatioCi interval_of(double ratio, std::vector<double> ratios, double alpha) {
  std::sort(ratios.begin(), ratios.end());
  const auto at = [&](double q) { return ratios[static_cast<size_t>(q * static_cast<double>(ratios.size() - 1))]; };
  return {ratio, at(alpha / 2), at(1 - alpha / 2)};
}

}  // namespace

RatioCi bootstrap_speed_ratio(const std::vector<double>& a, const std::vector<double>& b, double alpha,
                              uint32_t resamples) {
  RatioCi r;
  if (a.empty() || b.empty()) return r;
  r.ratio = median_of(a) / median_of(b);
  std::mt19937_64 rng(0x5eed);
  std::vector<double> ratios;
  ratios.reserve(resamples);
  for (uint32_t i = 0; i < resamples; ++i) ratios.push_back(median_of(resample(a, rng)) / median_of(resample(b, rng)));
  return interval_of(r.ratio, std::move(ratios), alpha);
}

RatioCi bootstrap_paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double alpha,
                               uint32_t resamples) {
  if (a.empty() || a.size() != b.size()) return {};
  std::vector<double> per_round;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] <= 0 || b[i] <= 0) return {};
    per_round.push_back(a[i] / b[i]);
  }
  std::mt19937_64 rng(0x5eed);
  std::vector<double> ratios;
  ratios.reserve(resamples);
  for (uint32_t i = 0; i < resamples; ++i) ratios.push_back(median_of(resample(per_round, rng)));
  return interval_of(median_of(per_round), std::move(ratios), alpha);
}

}  // namespace vgpu::bench
