// SPDX-License-Identifier: GPL-2.0-or-later
// warp: per-warp reductions and votes. Each warp sums its 32 values two
// ways (shfl.sync.bfly, shfl.sync.down), broadcasts lane 0's value
// (shfl.sync.idx) and takes three votes (ballot, all, any); lane 0 writes
// the warp's corpus::WarpOut. blockDim.x is a multiple of 32.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void warp_reduce(const int* in, corpus::WarpOut* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % 32;
  int v = in[i];
  int x = v;
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
  int d = v;
  for (int off = 16; off > 0; off >>= 1) d += __shfl_down_sync(0xffffffffu, d, off);
  int lane0 = __shfl_sync(0xffffffffu, v, 0);
  unsigned odd = __ballot_sync(0xffffffffu, v & 1);
  int all_positive = __all_sync(0xffffffffu, v > 0);
  int any_over = __any_sync(0xffffffffu, v > 1000);
  __syncwarp();
  if (lane == 0) {
    corpus::WarpOut& o = out[i / 32];
    o.sum_xor = x;
    o.sum_down = d;
    o.lane0 = lane0;
    o.ballot = odd;
    o.all_positive = all_positive;
    o.any_over = any_over;
  }
}
