// SPDX-License-Identifier: GPL-2.0-or-later
// globals: module-scope variables in .global and .const space. The host
// fills g_table and c_scale through cuModuleGetGlobal; the kernel writes
// out[i] = g_table[i] * c_scale[i % 4], then g_table[i] = i, and counts its
// threads into g_counter (atomicAdd) and the largest index into g_max.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

__device__ float g_table[corpus::kGlobalTable];
__device__ unsigned g_counter;
__device__ int g_max;
__constant__ float c_scale[4];

extern "C" __global__ void globals_rw(float* out) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= corpus::kGlobalTable) return;
  out[i] = g_table[i] * c_scale[i % 4];
  g_table[i] = static_cast<float>(i);
  atomicInc(&g_counter, 0xffffffffu);
  atomicMax(&g_max, i);
}
