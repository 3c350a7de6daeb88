// SPDX-License-Identifier: GPL-2.0-or-later
// The elementwise kernels, sgemm through OpenBLAS, and the conv2d output
// shape. conv2d and mriq live in their own files.
#include "gpu/kernels/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <limits>

#include "gpu/kernels/footprint.h"
#include "gpu/kernels/tile_pool.h"

namespace vgpu::gpu::kernels {

void fill(std::span<float> dst, float value) { std::fill(dst.begin(), dst.end(), value); }

void saxpy(float a, std::span<const float> x, std::span<float> y) {
  const size_t n = std::min(x.size(), y.size());
  for (size_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

void madd(std::span<const float> a, std::span<const float> b, std::span<float> c) {
  const size_t n = std::min({a.size(), b.size(), c.size()});
  for (size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

namespace {

struct TileShape {
  uint64_t rows = 0, cols = 0;  // 0: sgemm does nothing
  uint64_t row_tiles = 0, col_tiles = 0;
  uint64_t tiles() const { return row_tiles * col_tiles; }
};

TileShape tile_shape(const cls::SgemmArgs& g) {
  if (!sgemm_args_valid(g) || g.m == 0 || g.n == 0) return {};
  TileShape t{SGEMM_TILE_ROWS, SGEMM_TILE_COLS};
  const auto count = [&] {
    t.row_tiles = (uint64_t{g.m} + t.rows - 1) / t.rows;
    t.col_tiles = (uint64_t{g.n} + t.cols - 1) / t.cols;
    return t.tiles();
  };
  while (count() < MIN_TILES && t.cols > SGEMM_MIN_TILE_COLS) t.cols /= 2;
  while (count() < MIN_TILES && t.rows > SGEMM_MIN_TILE_ROWS) t.rows /= 2;
  return t;
}

}  // namespace

uint64_t sgemm_tiles(const cls::SgemmArgs& g) { return tile_shape(g).tiles(); }

uint64_t sgemm_tiles_run(const cls::SgemmArgs& g, const float* a, const float* b, float* c, uint64_t first,
                         uint64_t count, const TileStop& stop) {
  const TileShape s = tile_shape(g);
  if (first >= s.tiles()) return 0;
  const int n = static_cast<int>(g.n);
  const int k = static_cast<int>(g.k);
  const auto body = [&](uint64_t t) {
    const uint64_t row = t / s.col_tiles * s.rows;
    const uint64_t col = t % s.col_tiles * s.cols;
    const auto rows_here = static_cast<int>(std::min<uint64_t>(s.rows, g.m - row));
    const auto cols_here = static_cast<int>(std::min<uint64_t>(s.cols, g.n - col));
    // cblas requires lda >= max(1, k); with k == 0 A is never read and the
    // call only scales C by beta.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows_here, cols_here, k, g.alpha, a + row * g.k,
                std::max(k, 1), b + col, n, g.beta, c + row * g.n + col, n);
  };
  return for_each_tile(first, first + std::min(count, s.tiles() - first), body, stop) - first;
}

void sgemm(const cls::SgemmArgs& g, const float* a, const float* b, float* c) {
  sgemm_tiles_run(g, a, b, c, 0, sgemm_tiles(g));
}

namespace {

// One output dimension: (in + 2 pad - filter) / stride + 1, or 0.
uint32_t out_dim(uint32_t in, uint32_t pad, uint32_t filter, uint32_t stride) {
  const uint64_t padded = uint64_t{in} + 2 * uint64_t{pad};
  if (in == 0 || filter == 0 || stride == 0 || filter > padded) return 0;
  const uint64_t out = (padded - filter) / stride + 1;
  return out > std::numeric_limits<uint32_t>::max() ? 0 : static_cast<uint32_t>(out);
}

bool conv2d_shape_ok(const cls::Conv2dArgs& a) {
  return a.n != 0 && a.c != 0 && a.k != 0 && out_dim(a.h, a.pad_h, a.r, a.stride_h) != 0 &&
         out_dim(a.w, a.pad_w, a.s, a.stride_w) != 0;
}

}  // namespace

uint32_t conv2d_out_h(const cls::Conv2dArgs& a) {
  return conv2d_shape_ok(a) ? out_dim(a.h, a.pad_h, a.r, a.stride_h) : 0;
}

uint32_t conv2d_out_w(const cls::Conv2dArgs& a) {
  return conv2d_shape_ok(a) ? out_dim(a.w, a.pad_w, a.s, a.stride_w) : 0;
}

}  // namespace vgpu::gpu::kernels
