// SPDX-License-Identifier: GPL-2.0-or-later
// Reproducible test and benchmark inputs: n floats uniform in [lo, hi)
// from a seed, the same sequence on every run of a build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace vgpu {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(gen);
  return v;
}

}  // namespace vgpu
