// SPDX-License-Identifier: GPL-2.0-or-later
// The built-in kernels' bodies on an NVIDIA GPU, shared by the in-process
// CUDA engine (cuda_engine.cu) and the per-VM worker's PTX
// (worker/builtin_kernels.cu): one implementation, two launchers.
// Grid-stride loops over 256-thread blocks (BUILTIN_THREADS).
#pragma once

#include <cstdint>

#include "gpu/device/cuda_engine.h"

namespace vgpu::gpu::cuda {

constexpr unsigned BUILTIN_THREADS = 256;
// Parboil's ComputeQ tiles k through shared memory.
constexpr unsigned MRIQ_K_TILE = 1024;

__device__ __forceinline__ uint64_t grid_first() { return blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; }
__device__ __forceinline__ uint64_t grid_step() { return uint64_t{gridDim.x} * blockDim.x; }

__device__ __forceinline__ void saxpy_body(float a, const float* x, float* y, uint64_t n) {
  for (uint64_t i = grid_first(); i < n; i += grid_step()) y[i] = a * x[i] + y[i];
}

__device__ __forceinline__ void madd_body(const float* a, const float* b, float* c, uint64_t n) {
  for (uint64_t i = grid_first(); i < n; i += grid_step()) c[i] = a[i] + b[i];
}

// Parboil's ComputeQ: the phase is in turns; sincospif(2t) = sin/cos(2 pi t).
// One thread per x; a block of any size up to MRIQ_K_TILE.
__device__ __forceinline__ void mriq_body(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky,
                                          const float* kz, const float* phi, const float* x, const float* y,
                                          const float* z, float* qr, float* qi) {
  __shared__ float skx[MRIQ_K_TILE], sky[MRIQ_K_TILE], skz[MRIQ_K_TILE], sphi[MRIQ_K_TILE];
  const uint64_t i = grid_first();
  const float xi = i < num_x ? x[i] : 0.f, yi = i < num_x ? y[i] : 0.f, zi = i < num_x ? z[i] : 0.f;
  float ar = 0.f, ai = 0.f;
  for (uint32_t k0 = 0; k0 < num_k; k0 += MRIQ_K_TILE) {
    const uint32_t n = min(MRIQ_K_TILE, num_k - k0);
    __syncthreads();
    for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
      skx[j] = kx[k0 + j];
      sky[j] = ky[k0 + j];
      skz[j] = kz[k0 + j];
      sphi[j] = phi[k0 + j];
    }
    __syncthreads();
    for (uint32_t j = 0; j < n; ++j) {
      float s, c;
      sincospif(2.f * (skx[j] * xi + sky[j] * yi + skz[j] * zi), &s, &c);
      ar += sphi[j] * c;
      ai += sphi[j] * s;
    }
  }
  if (i < num_x) {
    qr[i] = ar;
    qi[i] = ai;
  }
}

// Direct convolution (NCHW, KCRS, cross-correlation).
__device__ __forceinline__ void conv2d_body(const ConvShape& g, const float* in, const float* f, float* out) {
  const uint64_t total = uint64_t{g.n} * g.k * g.p * g.q;
  for (uint64_t o = grid_first(); o < total; o += grid_step()) {
    const uint64_t q = o % g.q, p = o / g.q % g.p, k = o / (uint64_t{g.q} * g.p) % g.k,
                   n = o / (uint64_t{g.q} * g.p * g.k);
    float acc = 0.f;
    for (uint32_t c = 0; c < g.c; ++c)
      for (uint32_t r = 0; r < g.r; ++r) {
        const int64_t ih = int64_t(p * g.stride_h + r) - g.pad_h;
        if (ih < 0 || ih >= g.h) continue;
        for (uint32_t s = 0; s < g.s; ++s) {
          const int64_t iw = int64_t(q * g.stride_w + s) - g.pad_w;
          if (iw < 0 || iw >= g.w) continue;
          acc += in[((n * g.c + c) * g.h + ih) * g.w + iw] * f[((k * g.c + c) * g.r + r) * g.s + s];
        }
      }
    out[o] = acc;
  }
}

}  // namespace vgpu::gpu::cuda
