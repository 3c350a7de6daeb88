// SPDX-License-Identifier: GPL-2.0-or-later
// scan: inclusive prefix sum of ints in two passes. scan_block runs a
// Hillis-Steele scan per block in double-buffered shared memory and writes
// each block's total to sums (when sums is not null); the host scans the
// block totals with scan_block too (one block), then add_block_offsets adds
// the previous blocks' total to every element.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void scan_block(const int* in, int* out, int* sums, int n) {
  __shared__ int buf[2][corpus::kScanBlock];
  int tid = static_cast<int>(threadIdx.x);
  int i = static_cast<int>(blockIdx.x * blockDim.x) + tid;
  int cur = 0;
  buf[cur][tid] = i < n ? in[i] : 0;
  __syncthreads();
  for (int off = 1; off < static_cast<int>(blockDim.x); off <<= 1) {
    int v = buf[cur][tid];
    if (tid >= off) v += buf[cur][tid - off];
    buf[cur ^ 1][tid] = v;
    cur ^= 1;
    __syncthreads();
  }
  if (i < n) out[i] = buf[cur][tid];
  if (sums != nullptr && tid == static_cast<int>(blockDim.x) - 1) sums[blockIdx.x] = buf[cur][tid];
}

extern "C" __global__ void add_block_offsets(int* out, const int* scanned_sums, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}
