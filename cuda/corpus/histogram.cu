// SPDX-License-Identifier: GPL-2.0-or-later
// histogram: counts of byte values. Each block counts into a shared
// histogram with atomicAdd (atom.shared.add), then adds its counts to the
// global histogram (atom.global.add / red.global.add).
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void histogram(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[corpus::kHistBins];
  for (unsigned b = threadIdx.x; b < corpus::kHistBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (unsigned b = threadIdx.x; b < corpus::kHistBins; b += blockDim.x) {
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
  }
}
