// SPDX-License-Identifier: GPL-2.0-or-later
// matmul: C (m x n) = A (m x k) * B (k x n), row-major, 16x16 tiles staged
// in shared memory; one 16x16 block per output tile; edges padded with 0.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  constexpr int T = corpus::kMatmulTile;
  __shared__ float as[T][T];
  __shared__ float bs[T][T];
  int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  int row = static_cast<int>(blockIdx.y) * T + ty;
  int col = static_cast<int>(blockIdx.x) * T + tx;
  float acc = 0.0f;
  for (int t = 0; t < k; t += T) {
    as[ty][tx] = (row < m && t + tx < k) ? a[row * k + t + tx] : 0.0f;
    bs[ty][tx] = (col < n && t + ty < k) ? b[(t + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < T; ++i) acc += as[ty][i] * bs[i][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}
