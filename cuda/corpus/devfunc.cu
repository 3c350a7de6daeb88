// SPDX-License-Identifier: GPL-2.0-or-later
// devfunc: calls to __noinline__ device functions with f64 math. horner
// evaluates a polynomial with fma.rn.f64 in a loop; fib is recursive (call
// with a stack frame); the kernel adds sqrt.rn.f64 of |x|.
#include "vgpu_cuda.h"

__device__ __noinline__ double horner(const double* coef, int ncoef, double x) {
  double acc = 0.0;
  for (int i = ncoef - 1; i >= 0; --i) acc = __fma_rn(acc, x, coef[i]);
  return acc;
}

__device__ __noinline__ double fib(int n) { return n < 2 ? static_cast<double>(n) : fib(n - 1) + fib(n - 2); }

extern "C" __global__ void poly_eval(const double* coef, int ncoef, const double* xs, double* ys, double* fibs, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  double x = xs[i];
  ys[i] = horner(coef, ncoef, x) + __dsqrt_rn(x < 0.0 ? -x : x);
  fibs[i] = fib(i % 16);
}
