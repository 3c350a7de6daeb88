// SPDX-License-Identifier: GPL-2.0-or-later
// Naive CPU reference implementations of the built-in kernels: plain loops,
// double accumulation, double-precision sin/cos. Slow on purpose; the
// kernel tests and the guest-driver workloads compare against these.
// Same argument conventions as gpu/kernels/kernels.h (row major, NCHW /
// KCRS / NKPQ, beta == 0 does not read C). Invalid conv2d shapes do nothing.
#pragma once

#include <cstdint>
#include <span>

#include "vgpu/classes.h"

namespace vgpu::gpu::kernels::reference {

void fill(std::span<float> dst, float value);
void saxpy(float a, std::span<const float> x, std::span<float> y);
void madd(std::span<const float> a, std::span<const float> b, std::span<float> c);
void sgemm(const cls::SgemmArgs& args, const float* a, const float* b, float* c);
void conv2d(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output);
void mriq(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz, const float* phi_mag,
          const float* x, const float* y, const float* z, float* qr, float* qi);

}  // namespace vgpu::gpu::kernels::reference
