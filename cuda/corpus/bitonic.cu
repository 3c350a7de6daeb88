// SPDX-License-Identifier: GPL-2.0-or-later
// bitonic: sorts n ints (a power of two, at most kBitonicMax) ascending in
// one block's shared memory; blockDim.x = n / 2, each thread owns one
// compare-exchange pair per step.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void bitonic_sort(int* data, int n) {
  __shared__ int s[corpus::kBitonicMax];
  int t = static_cast<int>(threadIdx.x);
  s[t] = data[t];
  s[t + n / 2] = data[t + n / 2];
  __syncthreads();
  for (int size = 2; size <= n; size <<= 1) {
    for (int half = size / 2; half > 0; half >>= 1) {
      int lo = 2 * half * (t / half) + t % half;  // first of the pair
      int hi = lo + half;
      bool up = (lo & size) == 0;
      int x = s[lo], y = s[hi];
      if ((x > y) == up) {
        s[lo] = y;
        s[hi] = x;
      }
      __syncthreads();
    }
  }
  data[t] = s[t];
  data[t + n / 2] = s[t + n / 2];
}
