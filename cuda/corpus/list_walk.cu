// SPDX-License-Identifier: GPL-2.0-or-later
// list_walk: each thread walks one linked list whose next pointers are
// device addresses stored in device memory (dependent generic loads), and
// writes the sum of its values and its length.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void list_walk(corpus::Node* const* heads, int lists, long long* sums, int* lengths) {
  int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= lists) return;
  long long sum = 0;
  int len = 0;
  for (const corpus::Node* p = heads[t]; p != nullptr; p = p->next) {
    sum += p->value;
    ++len;
  }
  sums[t] = sum;
  lengths[t] = len;
}
