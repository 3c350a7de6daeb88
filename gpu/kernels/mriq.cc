// SPDX-License-Identifier: GPL-2.0-or-later
// Parboil MRI-Q computeQ in float, single-threaded:
//   Qr[x] = sum_k phiMag[k] * cos(2 pi (kx[k] x + ky[k] y + kz[k] z))
//   Qi[x] = sum_k phiMag[k] * sin(same)
// Each Q element sums its k terms in Parboil's order. The loops are turned
// around (k outer, a tile of x inner) and sin/cos are a branch-free
// polynomial, so the inner loop vectorizes without -ffast-math. The phase
// is reduced in turns (t - rint(t)) before scaling by 2 pi, which is exact,
// where Parboil scales first and reduces inside cosf/sinf.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr uint32_t TILE = 256;                        // x values per tile (5 KiB of locals)
constexpr float TWO_PI = 6.2831853071795864769f;      // Parboil's PIx2
constexpr float INTEGRAL = 0x1p23f;                   // floats from here on are integers
constexpr float ROUND_SMALL = 0x1.8p23f;              // (v + this) - this = rint(v), |v| < 2^22

// Taylor coefficients; on |a| <= pi/4 the truncation errors are below
// 2e-9 (sin, a^11 term) and 2e-10 (cos, a^12 term), under float rounding.
constexpr float S3 = -1.0f / 6.0f, S5 = 1.0f / 120.0f, S7 = -1.0f / 5040.0f,
                S9 = 1.0f / 362880.0f;
constexpr float C2 = -0.5f, C4 = 1.0f / 24.0f, C6 = -1.0f / 720.0f, C8 = 1.0f / 40320.0f,
                C10 = -1.0f / 3628800.0f;

// sin and cos of 2 pi t, t in turns. NaN and infinite t give NaN, as sinf does.
inline void sincos_turns(float t, float& sin_out, float& cos_out) {
  const float y = std::fabs(t);
  // r = t - rint(t): below 2^23, adding 2^23 rounds |t| to an integer
  // exactly; from 2^23 on every float is an integer (r = 0).
  const float whole = std::copysign((y + INTEGRAL) - INTEGRAL, t);
  const float r = y >= INTEGRAL && y <= FLT_MAX ? 0.0f : t - whole;
  const float quarter = (4.0f * r + ROUND_SMALL) - ROUND_SMALL;   // -2..2 quarter turns
  const float a = TWO_PI * (r - 0.25f * quarter);                // |a| <= pi/4
  const float a2 = a * a;
  const float s = a * (1.0f + a2 * (S3 + a2 * (S5 + a2 * (S7 + a2 * S9))));
  const float c = 1.0f + a2 * (C2 + a2 * (C4 + a2 * (C6 + a2 * (C8 + a2 * C10))));
  // Rotate by `quarter` quarter turns: sin(a + q pi/2), cos(a + q pi/2).
  const bool odd = quarter == 1.0f || quarter == -1.0f;
  const float s1 = odd ? c : s;
  const float c1 = odd ? s : c;
  const bool half = quarter == 2.0f || quarter == -2.0f;
  sin_out = half || quarter == -1.0f ? -s1 : s1;
  cos_out = half || quarter == 1.0f ? -c1 : c1;
}

// One tile of up to TILE x values against every k. Locals make the inner
// loop free of aliasing (a guest may overlap inputs and outputs).
[[gnu::target_clones("avx2", "default")]]
void tile(uint32_t num_k, const float* kx, const float* ky, const float* kz, const float* phi_mag,
          uint32_t n, const float* x, const float* y, const float* z, float* qr, float* qi) {
  alignas(64) float xs[TILE], ys[TILE], zs[TILE], acc_r[TILE], acc_i[TILE];
  std::copy_n(x, n, xs);
  std::copy_n(y, n, ys);
  std::copy_n(z, n, zs);
  std::fill_n(acc_r, n, 0.0f);
  std::fill_n(acc_i, n, 0.0f);
  for (uint32_t k = 0; k < num_k; ++k) {
    const float kxk = kx[k], kyk = ky[k], kzk = kz[k], phi = phi_mag[k];
    for (uint32_t i = 0; i < n; ++i) {
      float sn, cs;
      sincos_turns(kxk * xs[i] + kyk * ys[i] + kzk * zs[i], sn, cs);
      acc_r[i] += phi * cs;
      acc_i[i] += phi * sn;
    }
  }
  std::copy_n(acc_r, n, qr);
  std::copy_n(acc_i, n, qi);
}

}  // namespace

void mriq(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
          const float* phi_mag, const float* x, const float* y, const float* z, float* qr,
          float* qi) {
  for (uint32_t x0 = 0; x0 < num_x;) {
    const uint32_t n = std::min(TILE, num_x - x0);
    tile(num_k, kx, ky, kz, phi_mag, n, x + x0, y + x0, z + x0, qr + x0, qi + x0);
    x0 += n;
  }
}

}  // namespace vgpu::gpu::kernels
