// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d as im2col + cblas_sgemm in tiles of the output (kernels.h): for
// image n, the tile of output channels [k0, k1) at output positions
// [j0, j1) = filter rows k0..k1 (CRS wide) * columns j0..j1 of the im2col
// matrix (CRS x PQ). The column matrix is built a band of output positions
// at a time, so the workspace stays bounded however large the
// (guest-chosen) image is, and every tile of a band shares it. Whole or in
// pieces, a tile is the same single-threaded BLAS call, so the result does
// not depend on where a launch is cut. Tiles run on the tile pool
// (tile_pool.h): a pointwise launch's tiles each on their own, the others
// a band at a time, the thread building the band's columns in its own
// workspace.
#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "gpu/kernels/checked.h"
#include "gpu/kernels/conv2d_detail.h"
#include "gpu/kernels/footprint.h"
#include "gpu/kernels/kernels.h"
#include "gpu/kernels/tile_pool.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr size_t WORKSPACE_FLOATS = size_t{1} << 20;  // 4 MiB of columns per band, per tile thread

struct Shape {
  int64_t c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, p, q;
  int64_t crs() const { return c * r * s; }
  int64_t pq() const { return p * q; }
};

Shape shape_of(const cls::Conv2dArgs& a) {
  return Shape{
      a.c, a.h, a.w, a.k, a.r, a.s, a.pad_h, a.pad_w, a.stride_h, a.stride_w, conv2d_out_h(a), conv2d_out_w(a)};
}

// Smallest q >= 0 with q * stride + s >= pad, i.e. first in-bounds column.
// One tile of the output: image n, positions [j0, j1), channels [k0, k1).
struct Tile {
  int64_t n, j0, j1, k0, k1;
};

// How a launch's output is cut into tiles: bands of `band` output
// positions per image, CONV2D_TILE_CHANNELS output channels per tile.
struct Tiling {
  int64_t band = 1;
  int64_t bands = 0;
  int64_t channel_tiles = 0;
  uint64_t tiles = 0;  // n * bands * channel_tiles; 0 when conv2d does nothing
};

int64_t first_q(int64_t s, const Shape& g) { return s >= g.pad_w ? 0 : (g.pad_w - s + g.stride_w - 1) / g.stride_w; }

// Smallest q with q * stride + s - pad >= w, i.e. one past the last
// in-bounds column, clamped to q.
int64_t end_q(int64_t s, const Shape& g) {
  const int64_t limit = g.w + g.pad_w - s;  // > 0 always: s < w + 2 pad
  return std::min(g.q, (limit + g.stride_w - 1) / g.stride_w);
}

// Columns [j0, j1) of the im2col matrix of one image into col (row-major,
// CRS rows of j1 - j0 floats). Out-of-image taps read as zero.
void im2col_band(const Shape& g, const float* image, int64_t j0, int64_t j1, float* col) {
  const int64_t width = j1 - j0;
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        float* row = col + ((c * g.r + r) * g.s + s) * width;
        const int64_t q_lo = first_q(s, g);
        const int64_t q_hi = std::max(q_lo, end_q(s, g));
        for (int64_t j = j0; j < j1;) {
          const int64_t p = j / g.q;
          const int64_t qa = j - p * g.q;
          const int64_t qb = std::min(g.q, qa + (j1 - j));
          float* out = row + (j - j0);
          const int64_t ih = p * g.stride_h + r - g.pad_h;
          if (ih < 0 || ih >= g.h) {
            std::fill(out, out + (qb - qa), 0.0f);
          } else {
            const float* in = image + (c * g.h + ih) * g.w;
            const int64_t shift = s - g.pad_w;
            const int64_t lo = std::clamp(q_lo, qa, qb);
            const int64_t hi = std::clamp(q_hi, lo, qb);
            std::fill(out, out + (lo - qa), 0.0f);
            for (int64_t qq = lo; qq < hi; ++qq) out[qq - qa] = in[qq * g.stride_w + shift];
            std::fill(out + (hi - qa), out + (qb - qa), 0.0f);
          }
          j += qb - qa;
        }
      }
    }
  }
}

// Without a workspace: one output element at a time (used only when the
// host cannot allocate even one band of the im2col matrix), for the
// output channels [k0, k1) at positions [j0, j1) of one image.
void direct(const Shape& g, const float* image, const float* filter, float* out, const Tile& t) {
  for (int64_t k = t.k0; k < t.k1; ++k)
    for (int64_t j = t.j0; j < t.j1; ++j) {
      const int64_t p = j / g.q, q = j % g.q;
      float acc = 0.0f;
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t r = 0; r < g.r; ++r) {
          const int64_t ih = p * g.stride_h + r - g.pad_h;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t s = 0; s < g.s; ++s) {
            const int64_t iw = q * g.stride_w + s - g.pad_w;
            if (iw < 0 || iw >= g.w) continue;
            acc += image[(c * g.h + ih) * g.w + iw] * filter[((k * g.c + c) * g.r + r) * g.s + s];
          }
        }
      out[(k - t.k0) * g.pq() + (j - t.j0)] = acc;
    }
}

// A 1x1 filter with unit stride and no padding: the image itself is the
// column matrix (C x HW), so a tile is one GEMM with no copy.
bool is_pointwise(const cls::Conv2dArgs& a) {
  return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
}

// Output positions per band: CONV2D_TILE_COLUMNS, fewer where that many
// columns of the im2col matrix would pass the workspace, at least one.
int64_t band_of(const cls::Conv2dArgs& a, const Shape& g, size_t workspace_floats) {
  const int64_t limit = static_cast<int64_t>(std::min(workspace_floats, size_t{1} << 40));
  const int64_t fit = is_pointwise(a) ? CONV2D_TILE_COLUMNS : std::min<int64_t>(CONV2D_TILE_COLUMNS, limit / g.crs());
  return std::clamp(fit, int64_t{1}, g.pq());
}

Tiling tiling_of(const cls::Conv2dArgs& a, size_t workspace_floats) {
  if (!conv2d_args_valid(a)) return {};
  const Shape g = shape_of(a);
  Tiling t;
  t.band = band_of(a, g, workspace_floats);
  t.channel_tiles = (g.k + CONV2D_TILE_CHANNELS - 1) / CONV2D_TILE_CHANNELS;
  // The pool's tasks: bands, or a pointwise launch's tiles (kernels.h).
  const uint64_t per_band = is_pointwise(a) ? static_cast<uint64_t>(t.channel_tiles) : 1;
  const auto tasks = [&] {
    t.bands = (g.pq() + t.band - 1) / t.band;
    return checked::mul(checked::mul(a.n, static_cast<uint64_t>(t.bands)), per_band).value_or(MIN_TILES);
  };
  while (tasks() < MIN_TILES && t.band / 2 >= CONV2D_MIN_TILE_COLUMNS) t.band /= 2;
  // The output's n*k*pq floats fit in 64 bits for any launch (its
  // footprint), and there are no more tiles than that.
  t.tiles = checked::mul(checked::mul(a.n, static_cast<uint64_t>(t.bands)), static_cast<uint64_t>(t.channel_tiles))
                .value_or(0);
  return t;
}

// Tile `index`: image-major, then bands, then channel tiles, so the tiles
// of one band follow each other and share its im2col columns.
Tile tile_at(const Shape& g, const Tiling& t, uint64_t index) {
  const auto per_image = static_cast<uint64_t>(t.bands * t.channel_tiles);
  const auto in_image = static_cast<int64_t>(index % per_image);
  Tile tile;
  tile.n = static_cast<int64_t>(index / per_image);
  tile.j0 = in_image / t.channel_tiles * t.band;
  tile.j1 = std::min(g.pq(), tile.j0 + t.band);
  tile.k0 = in_image % t.channel_tiles * CONV2D_TILE_CHANNELS;
  tile.k1 = std::min(g.k, tile.k0 + int64_t{CONV2D_TILE_CHANNELS});
  return tile;
}

}  // namespace

uint64_t conv2d_tiles(const cls::Conv2dArgs& a) { return tiling_of(a, WORKSPACE_FLOATS).tiles; }

uint64_t conv2d_tiles_run(const cls::Conv2dArgs& a, const float* input, const float* filter, float* output,
                          uint64_t first, uint64_t count, const TileStop& stop) {
  return detail::conv2d_tiles_run(a, input, filter, output, first, count, WORKSPACE_FLOATS, stop);
}

void conv2d(const cls::Conv2dArgs& a, const float* input, const float* filter, float* output) {
  conv2d_tiles_run(a, input, filter, output, 0, conv2d_tiles(a));
}

namespace {

// Room for `floats` of im2col columns on this thread: a buffer the thread
// keeps for its next band where the default workspace holds them, else
// one that `once` owns for this band only; null when the host has no
// memory for it.
float* band_columns(size_t floats, std::unique_ptr<float[]>& once) {
  if (floats > WORKSPACE_FLOATS) {
    once.reset(new (std::nothrow) float[floats]);
    return once.get();
  }
  thread_local std::unique_ptr<float[]> kept;
  if (!kept) kept.reset(new (std::nothrow) float[WORKSPACE_FLOATS]);
  return kept.get();
}

// Tiles [lo, hi) of one band of one image: its columns once, then one
// BLAS call per tile.
void run_band(const cls::Conv2dArgs& a, const Tiling& t, const float* input, const float* filter, float* output,
              uint64_t lo, uint64_t hi) {
  const Shape g = shape_of(a);
  const int64_t crs = g.crs(), pq = g.pq();
  const bool pointwise = is_pointwise(a);
  std::unique_ptr<float[]> once;
  float* col = pointwise ? nullptr : band_columns(static_cast<size_t>(t.band * crs), once);
  for (uint64_t i = lo; i < hi; ++i) {
    const Tile tile = tile_at(g, t, i);
    const float* image = input + tile.n * g.c * g.h * g.w;
    float* out = output + (tile.n * g.k + tile.k0) * pq + tile.j0;
    const int width = static_cast<int>(tile.j1 - tile.j0);
    const float* columns = image + tile.j0;  // pointwise: the image's own rows of pq
    int ld_columns = static_cast<int>(pq);
    if (!pointwise && col == nullptr) {
      direct(g, image, filter, out, tile);
      continue;
    }
    if (!pointwise) {
      if (i == lo) im2col_band(g, image, tile.j0, tile.j1, col);
      columns = col;
      ld_columns = width;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(tile.k1 - tile.k0), width,
                static_cast<int>(crs), 1.0f, filter + tile.k0 * crs, static_cast<int>(crs), columns, ld_columns, 0.0f,
                out, static_cast<int>(pq));
  }
}

}  // namespace

uint64_t detail::conv2d_tiles_run(const cls::Conv2dArgs& a, const float* input, const float* filter, float* output,
                                  uint64_t first, uint64_t count, size_t workspace_floats, const TileStop& stop) {
  const Tiling t = tiling_of(a, workspace_floats);
  if (first >= t.tiles || count == 0) return 0;
  const uint64_t end = first + std::min(count, t.tiles - first);
  // A pointwise launch's tiles are independent; the others share their
  // band's columns, so a band's tiles in the range run on one thread.
  const auto per_task = is_pointwise(a) ? uint64_t{1} : static_cast<uint64_t>(t.channel_tiles);
  const uint64_t first_task = first / per_task;
  // Tiles [first, end) up to task first_task + tasks.
  const auto tiles_before = [&](uint64_t tasks) { return std::min(end, (first_task + tasks) * per_task) - first; };
  const TileStop band_stop = [&](uint64_t tasks) { return stop(tiles_before(tasks)); };
  const uint64_t task_end = for_each_tile(
      first_task, (end - 1) / per_task + 1,
      [&](uint64_t task) {
        const uint64_t lo = std::max(first, task * per_task), hi = std::min(end, (task + 1) * per_task);
        run_band(a, t, input, filter, output, lo, hi);
      },
      stop ? band_stop : TileStop{});
  return tiles_before(task_end - first_task);
}

bool detail::conv2d_pointwise(const cls::Conv2dArgs& a) { return is_pointwise(a); }

void detail::conv2d_im2col(const cls::Conv2dArgs& a, const float* image, int64_t j0, int64_t j1, float* col) {
  im2col_band(shape_of(a), image, j0, j1, col);
}

void detail::conv2d_banded(const cls::Conv2dArgs& a, const float* input, const float* filter, float* output,
                           size_t workspace_floats) {
  conv2d_tiles_run(a, input, filter, output, 0, tiling_of(a, workspace_floats).tiles, workspace_floats);
}

}  // namespace vgpu::gpu::kernels
