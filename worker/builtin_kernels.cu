// SPDX-License-Identifier: GPL-2.0-or-later
// The worker's built-in kernels (docs/cuda-worker.md, "Built-in kernels in
// the worker"): the bodies the in-process CUDA engine runs
// (gpu/device/builtin_kernels.cuh) under unmangled names, compiled to PTX
// by scripts/gen-worker-ptx into builtin_kernels.ptx, which the worker loads
// through the driver API as it loads a guest's module. So the worker
// builds and runs with no toolkit; this file is compiled only by that
// script.
#include "gpu/device/builtin_kernels.cuh"

using namespace vgpu::gpu::cuda;

extern "C" __global__ void vgpu_saxpy(float a, const float* x, float* y, uint64_t n) { saxpy_body(a, x, y, n); }

extern "C" __global__ void vgpu_madd(const float* a, const float* b, float* c, uint64_t n) { madd_body(a, b, c, n); }

extern "C" __global__ void vgpu_mriq(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky,
                                     const float* kz, const float* phi, const float* x, const float* y,
                                     const float* z, float* qr, float* qi) {
  mriq_body(num_k, num_x, kx, ky, kz, phi, x, y, z, qr, qi);
}

extern "C" __global__ void vgpu_conv2d(ConvShape g, const float* in, const float* f, float* out) {
  conv2d_body(g, in, f, out);
}
