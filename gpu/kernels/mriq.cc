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
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr uint32_t TILE = 256;                    // x values per tile (5 KiB of locals)
constexpr float TWO_PI = 6.2831853071795864769f;  // Parboil's PIx2
constexpr float INTEGRAL = 0x1p23f;               // floats from here on are integers
constexpr float ROUND_SMALL = 0x1.8p23f;          // (v + this) - this = rint(v), |v| < 2^22

// Taylor coefficients; on |a| <= pi/4 the truncation errors are below
// 2e-9 (sin, a^11 term) and 2e-10 (cos, a^12 term), under float rounding.
constexpr float S3 = -1.0f / 6.0f, S5 = 1.0f / 120.0f, S7 = -1.0f / 5040.0f, S9 = 1.0f / 362880.0f;
constexpr float C2 = -0.5f, C4 = 1.0f / 24.0f, C6 = -1.0f / 720.0f, C8 = 1.0f / 40320.0f, C10 = -1.0f / 3628800.0f;

// sin and cos of 2 pi t, t in turns. NaN and infinite t give NaN, as sinf
// does. There is no float comparison (under the default -ftrapping-math
// GCC will not if-convert one), so the caller's loop vectorizes without
// -ffast-math.
inline void sincos_turns(float t, float& sin_out, float& cos_out) {
  // y = min(|t|, 2^23), compared as bit patterns (non-negative floats order
  // like their bits; an integer compare does not trap). Every float from
  // 2^23 on is an integer, so clamping it there keeps a fraction of 0.
  const float y = std::bit_cast<float>(
      std::min(std::bit_cast<uint32_t>(std::fabs(t)), std::bit_cast<uint32_t>(INTEGRAL)));
  // r = t - rint(t) in [-1/2, 1/2]: adding 2^23 rounds y to an integer
  // exactly. (t - t) is 0, or NaN for an infinite or NaN t.
  const float r = std::copysign(1.0f, t) * (y - ((y + INTEGRAL) - INTEGRAL)) + (t - t);
  const float q = (4.0f * r + ROUND_SMALL) - ROUND_SMALL;  // quarter turns, -2..2
  const float a = TWO_PI * (r - 0.25f * q);                // |a| <= pi/4
  const float a2 = a * a;
  const float s = a * (1.0f + a2 * (S3 + a2 * (S5 + a2 * (S7 + a2 * S9))));
  const float c = 1.0f + a2 * (C2 + a2 * (C4 + a2 * (C6 + a2 * (C8 + a2 * C10))));
  // Rotate by q quarter turns: sin(a + q pi/2) = s cq + c sq and
  // cos(a + q pi/2) = c cq - s sq, where cq = cos(q pi/2), sq = sin(q pi/2)
  // are these polynomials, exact at q = -2..2 (one is 0, the other +-1:
  // +-6 * float(1/6) and +-3 * float(1/3) round to +-1 exactly, and a
  // multiply is far cheaper than a vector divide).
  const float q2 = q * q;
  const float cq = (6.0f - 7.0f * q2 + q2 * q2) * (1.0f / 6.0f);
  const float sq = q * (4.0f - q2) * (1.0f / 3.0f);
  sin_out = s * cq + c * sq;
  cos_out = c * cq - s * sq;
}

// One tile of up to TILE x values against every k. Locals make the inner
// loop free of aliasing (a guest may overlap inputs and outputs).
[[gnu::target_clones("avx2", "default")]] void tile(uint32_t num_k, const float* kx, const float* ky, const float* kz,
                                                    const float* phi_mag, uint32_t n, const float* x, const float* y,
                                                    const float* z, float* qr, float* qi) {
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

void mriq(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz, const float* phi_mag,
          const float* x, const float* y, const float* z, float* qr, float* qi) {
  for (uint32_t x0 = 0; x0 < num_x;) {
    const uint32_t n = std::min(TILE, num_x - x0);
    tile(num_k, kx, ky, kz, phi_mag, n, x + x0, y + x0, z + x0, qr + x0, qi + x0);
    x0 += n;
  }
}

}  // namespace vgpu::gpu::kernels
