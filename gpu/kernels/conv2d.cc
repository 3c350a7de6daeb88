// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d as im2col + cblas_sgemm: for image n, output (K x PQ) =
// filter (K x CRS) * columns (CRS x PQ). The column matrix is built for a
// band of output positions at a time, so the workspace stays bounded
// however large the (guest-chosen) image is.
#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "gpu/kernels/conv2d_detail.h"
#include "gpu/kernels/footprint.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr size_t WORKSPACE_FLOATS = size_t{4} << 20;  // 16 MiB of columns per band

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
// host cannot allocate even one column of the im2col matrix).
void direct(const Shape& g, int64_t n_images, const float* input, const float* filter, float* output) {
  for (int64_t n = 0; n < n_images; ++n)
    for (int64_t k = 0; k < g.k; ++k)
      for (int64_t p = 0; p < g.p; ++p)
        for (int64_t q = 0; q < g.q; ++q) {
          float acc = 0.0f;
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t r = 0; r < g.r; ++r) {
              const int64_t ih = p * g.stride_h + r - g.pad_h;
              if (ih < 0 || ih >= g.h) continue;
              for (int64_t s = 0; s < g.s; ++s) {
                const int64_t iw = q * g.stride_w + s - g.pad_w;
                if (iw < 0 || iw >= g.w) continue;
                acc += input[((n * g.c + c) * g.h + ih) * g.w + iw] * filter[((k * g.c + c) * g.r + r) * g.s + s];
              }
            }
          output[((n * g.k + k) * g.p + p) * g.q + q] = acc;
        }
}

// A 1x1 filter with unit stride and no padding: the image itself is the
// column matrix (C x HW), so each image is one GEMM with no copy.
bool is_pointwise(const cls::Conv2dArgs& a) {
  return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
}

void pointwise(const Shape& g, int64_t n_images, const float* input, const float* filter, float* output) {
  const int64_t pq = g.pq();  // == h * w
  for (int64_t n = 0; n < n_images; ++n)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.k), static_cast<int>(pq),
                static_cast<int>(g.c), 1.0f, filter, static_cast<int>(g.c), input + n * g.c * pq, static_cast<int>(pq),
                0.0f, output + n * g.k * pq, static_cast<int>(pq));
}

}  // namespace

void conv2d(const cls::Conv2dArgs& a, const float* input, const float* filter, float* output) {
  detail::conv2d_banded(a, input, filter, output, WORKSPACE_FLOATS);
}

void detail::conv2d_banded(const cls::Conv2dArgs& a, const float* input, const float* filter, float* output,
                           size_t workspace_floats) {
  if (!conv2d_args_valid(a)) return;
  const Shape g = shape_of(a);
  const int64_t crs = g.crs();
  const int64_t pq = g.pq();
  if (is_pointwise(a)) return pointwise(g, a.n, input, filter, output);
  const int64_t limit = static_cast<int64_t>(std::min(workspace_floats, size_t{1} << 40));
  const int64_t band = std::clamp(limit / crs, int64_t{1}, pq);
  const auto words = static_cast<size_t>(band * crs);
  std::unique_ptr<float[]> col(new (std::nothrow) float[words]);
  if (!col) return direct(g, a.n, input, filter, output);

  for (int64_t n = 0; n < a.n; ++n) {
    const float* image = input + n * g.c * g.h * g.w;
    float* out = output + n * g.k * pq;
    for (int64_t j0 = 0; j0 < pq; j0 += band) {
      const int64_t j1 = std::min(pq, j0 + band);
      im2col_band(g, image, j0, j1, col.get());
      const int width = static_cast<int>(j1 - j0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.k), width, static_cast<int>(crs), 1.0f,
                  filter, static_cast<int>(crs), col.get(), width, 0.0f, out + j0, static_cast<int>(pq));
    }
  }
}

}  // namespace vgpu::gpu::kernels
