// SPDX-License-Identifier: GPL-2.0-or-later
// The user kernels of `vgpu-bench ptx` (bench/workloads/ptx_cmd.cc),
// compiled to PTX at build time by clang-14 with no NVIDIA toolkit:
//   clang-14 -x cuda --cuda-device-only --cuda-path=/nonexistent -nocudainc -nocudalib \
//     --cuda-gpu-arch=sm_70 -O2 -S -o ptx_bench_kernels.ptx ptx_bench_kernels.cu
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#include "__clang_cuda_builtin_vars.h"

extern "C" __global__ void nop(unsigned* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && out == nullptr) *out = 1;
}

extern "C" __global__ void saxpy(unsigned n, float a, const float* x, float* y) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// C = A * B, n x n, 16 x 16 tiles in shared memory (n a multiple of 16).
extern "C" __global__ void matmul(unsigned n, const float* a, const float* b, float* c) {
  __shared__ float ta[16][16];
  __shared__ float tb[16][16];
  const unsigned row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float sum = 0.0f;
  for (unsigned t = 0; t < n; t += 16) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (unsigned k = 0; k < 16; ++k) sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = sum;
}

// partial[block] = the sum of the block's 256 elements (a tree in shared memory).
extern "C" __global__ void reduce(unsigned n, const float* x, float* partial) {
  __shared__ float s[256];
  const unsigned i = blockIdx.x * 256 + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
