// SPDX-License-Identifier: GPL-2.0-or-later
// Inputs and tolerances for the built-in kernels' tests: seeded uniform
// floats in [-1, 1), and the workloads' tolerances
// (testbed/workloads/gemm.cc): relative to the sum of the terms'
// magnitudes, plus an absolute floor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace vgpu::worker::testing {

inline constexpr double REL_TOL = 1e-4, ABS_TOL = 1e-5;

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}

}  // namespace vgpu::worker::testing
