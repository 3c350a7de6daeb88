// SPDX-License-Identifier: GPL-2.0-or-later
// saxpy: y[i] = a * x[i] + y[i] over a grid-stride loop. Both compilers
// contract a * x + y into one fma.rn.f32; the reference uses fmaf.
#include "vgpu_cuda.h"

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) y[i] = a * x[i] + y[i];
}
