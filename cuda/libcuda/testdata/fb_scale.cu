// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel of the fat-binary test inputs (README.md gives each nvcc command).
extern "C" __global__ void fb_scale(int n, float a, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * y[i];
}
