// SPDX-License-Identifier: GPL-2.0-or-later
// stencil: one 5-point Jacobi sweep on an nx x ny grid (row-major) with 2D
// blocks; boundary cells are copied unchanged.
#include "vgpu_cuda.h"

extern "C" __global__ void jacobi5(const float* in, float* out, int nx, int ny) {
  int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= nx || y >= ny) return;
  int i = y * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.25f * (((in[i - 1] + in[i + 1]) + in[i - nx]) + in[i + nx]);
}
