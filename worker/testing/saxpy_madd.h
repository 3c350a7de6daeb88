// SPDX-License-Identifier: GPL-2.0-or-later
// What the built-in kernels' tests expect of saxpy (y = a x + y) followed
// by madd (c = x + y, on the new y): the model's results (gpu/kernels)
// and each element's scale for the tolerance (the sum of its terms'
// magnitudes, floats.h).
#pragma once
#include <cmath>
#include <vector>
#include "gpu/kernels/kernels.h"

namespace vgpu::worker::testing {

struct SaxpyMadd {
  std::vector<float> y, c, scale_y, scale_c;
};

inline SaxpyMadd saxpy_then_madd(float a, const std::vector<float>& x, const std::vector<float>& y) {
  const size_t n = x.size();
  SaxpyMadd m{y, std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
  gpu::kernels::saxpy(a, x, m.y);
  gpu::kernels::madd(x, m.y, m.c);
  for (size_t i = 0; i < n; ++i) {
    m.scale_y[i] = a * std::fabs(x[i]) + std::fabs(y[i]);
    m.scale_c[i] = std::fabs(x[i]) + m.scale_y[i];
  }
  return m;
}

}  // namespace vgpu::worker::testing
