// SPDX-License-Identifier: GPL-2.0-or-later
// bfs: one level of breadth-first search over a CSR graph. One thread per
// frontier vertex; a neighbour is claimed with atomicCAS on its distance
// (-1 = unvisited) and appended to the next frontier with atomicAdd.
#include "vgpu_cuda.h"

extern "C" __global__ void bfs_step(const int* row_ptr, const int* col_idx, const int* frontier, int frontier_size,
                                    int* next_frontier, int* next_size, int* dist, int level) {
  int f = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (f >= frontier_size) return;
  int u = frontier[f];
  for (int e = row_ptr[u]; e < row_ptr[u + 1]; ++e) {
    int v = col_idx[e];
    if (atomicCAS(&dist[v], -1, level + 1) == -1) next_frontier[atomicAdd(next_size, 1)] = v;
  }
}
