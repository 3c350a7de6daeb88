// SPDX-License-Identifier: GPL-2.0-or-later
// vectorAdd: c[i] = a[i] + b[i], one thread per element.
#include "vgpu_cuda.h"

extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) c[i] = a[i] + b[i];
}
