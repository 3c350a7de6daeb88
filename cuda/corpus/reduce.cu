// SPDX-License-Identifier: GPL-2.0-or-later
// reduce: each block sums kReduceBlock * 2 unsigned ints with a tree in
// shared memory and writes its partial sum; the host adds the partials.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void reduce(const unsigned* in, unsigned* partial, int n) {
  __shared__ unsigned s[corpus::kReduceBlock];
  unsigned tid = threadIdx.x;
  int i = static_cast<int>(blockIdx.x * blockDim.x * 2 + tid);
  unsigned v = 0;
  if (i < n) v = in[i];
  if (i + static_cast<int>(blockDim.x) < n) v += in[i + static_cast<int>(blockDim.x)];
  s[tid] = v;
  __syncthreads();
  for (unsigned step = blockDim.x / 2; step > 0; step >>= 1) {
    if (tid < step) s[tid] += s[tid + step];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = s[0];
}
