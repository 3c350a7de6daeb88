// SPDX-License-Identifier: GPL-2.0-or-later
// A user's kernel: saxpy, y = a * x + y. Built to PTX with no NVIDIA
// toolkit (the header is cuda/corpus/vgpu_cuda.h, for __global__ & co.):
//   clang-14 -x cuda --cuda-device-only --cuda-path=/nonexistent -nocudainc -nocudalib \
//     --cuda-gpu-arch=sm_70 -O2 -S -I cuda/corpus -o saxpy.ptx cuda/examples/saxpy.cu
// or with NVIDIA's:  nvcc -ptx -arch=sm_75 -I cuda/corpus -o saxpy.ptx cuda/examples/saxpy.cu
#include "vgpu_cuda.h"

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}
