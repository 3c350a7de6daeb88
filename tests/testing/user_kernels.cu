// SPDX-License-Identifier: GPL-2.0-or-later
// The kernels of tests/user_kernel_test.cc, tests/isolation_user_kernels_test.cc (PTX:
// tests/testing/user_kernels.ptx, read by user_kernels_ptx.h) and the fuzz seed
// gpu/ptx/fuzz/corpus/kernels.ptx, written here. Their PTX is clang-14's output of:
//   clang-14 -x cuda --cuda-device-only --cuda-path=/nonexistent -nocudainc -nocudalib \
//     --cuda-gpu-arch=sm_70 -O2 -S -o kernels.ptx user_kernels.cu
#define __global__ __attribute__((global))
#include "__clang_cuda_builtin_vars.h"
extern "C" __global__ void vadd(const float* a, const float* b, float* c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void store_at(unsigned long long addr, unsigned v) {
  *(volatile unsigned*)addr = v;
}
extern "C" __global__ void forever(unsigned* flag) {
  while (*(volatile unsigned*)flag == 0) {}
}
__attribute__((device)) unsigned counter = 5;
extern "C" __global__ void bump(unsigned by) {
  __nvvm_atom_add_gen_i((int*)&counter, (int)by);
}
extern "C" __global__ void copy_words(const unsigned* src, unsigned* dst, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
// Two calls a level, so that no compiler turns the recursion into a loop.
__attribute__((device)) __attribute__((noinline)) unsigned walk(unsigned n) {
  return n < 2 ? n : walk(n - 1) + walk(n - 2);
}
extern "C" __global__ void recurse(unsigned n, unsigned* out) { *out = walk(n); }
