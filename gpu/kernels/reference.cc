// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/kernels/reference.h"

#include <cmath>
#include <cstddef>
#include <numbers>

#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels::reference {

void fill(std::span<float> dst, float value) {
  for (float& v : dst) v = value;
}

void saxpy(float a, std::span<const float> x, std::span<float> y) {
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) y[i] = a * x[i] + y[i];
}

void madd(std::span<const float> a, std::span<const float> b, std::span<float> c) {
  for (size_t i = 0; i < a.size() && i < b.size() && i < c.size(); ++i) c[i] = a[i] + b[i];
}

void sgemm(const cls::SgemmArgs& g, const float* a, const float* b, float* c) {
  const size_t m = g.m, n = g.n, k = g.k;
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t l = 0; l < k; ++l) acc += double{a[i * k + l]} * double{b[l * n + j]};
      double result = double{g.alpha} * acc;
      if (g.beta != 0.0f) result += double{g.beta} * double{c[i * n + j]};
      c[i * n + j] = static_cast<float>(result);
    }
}

void conv2d(const cls::Conv2dArgs& g, const float* input, const float* filter, float* output) {
  const int64_t p_out = conv2d_out_h(g), q_out = conv2d_out_w(g);
  if (p_out == 0 || q_out == 0) return;
  const int64_t nn = g.n, cc = g.c, hh = g.h, ww = g.w, kk = g.k, rr = g.r, ss = g.s;
  for (int64_t n = 0; n < nn; ++n)
    for (int64_t k = 0; k < kk; ++k)
      for (int64_t p = 0; p < p_out; ++p)
        for (int64_t q = 0; q < q_out; ++q) {
          double acc = 0.0;
          for (int64_t c = 0; c < cc; ++c)
            for (int64_t r = 0; r < rr; ++r)
              for (int64_t s = 0; s < ss; ++s) {
                const int64_t ih = p * g.stride_h + r - g.pad_h;
                const int64_t iw = q * g.stride_w + s - g.pad_w;
                if (ih < 0 || ih >= hh || iw < 0 || iw >= ww) continue;  // zero padding
                acc += double{input[((n * cc + c) * hh + ih) * ww + iw]} *
                       double{filter[((k * cc + c) * rr + r) * ss + s]};
              }
          output[((n * kk + k) * p_out + p) * q_out + q] = static_cast<float>(acc);
        }
}

void mriq(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz, const float* phi_mag,
          const float* x, const float* y, const float* z, float* qr, float* qi) {
  for (uint32_t i = 0; i < num_x; ++i) {
    double acc_r = 0.0, acc_i = 0.0;
    for (uint32_t k = 0; k < num_k; ++k) {
      const double arg = 2.0 * std::numbers::pi * (double{kx[k]} * x[i] + double{ky[k]} * y[i] + double{kz[k]} * z[i]);
      acc_r += double{phi_mag[k]} * std::cos(arg);
      acc_i += double{phi_mag[k]} * std::sin(arg);
    }
    qr[i] = static_cast<float>(acc_r);
    qi[i] = static_cast<float>(acc_i);
  }
}

}  // namespace vgpu::gpu::kernels::reference
