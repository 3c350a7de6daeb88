// SPDX-License-Identifier: GPL-2.0-or-later
// The kernels of the runtime's fat-binary test inputs (README.md gives each
// nvcc command; registration_test.cc registers them as nvcc's code does).
extern "C" {
__constant__ float rt_coef[2];  // y = rt_coef[0] * y + rt_coef[1]
__device__ unsigned int rt_count;

__global__ void rt_axpb(int n, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    y[i] = rt_coef[0] * y[i] + rt_coef[1];
    atomicAdd(&rt_count, 1u);
  }
}

__global__ void rt_store(int* p, int v) { *p = v; }  // a null p faults
}
