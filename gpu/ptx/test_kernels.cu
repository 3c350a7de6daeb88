// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter tests' kernels (test_kernels.h): the source of
// test_kernels.ptx, which is clang-14's output for it, as is:
//   clang-14 -x cuda --cuda-device-only --cuda-path=/nonexistent -nocudainc -nocudalib
//            --cuda-gpu-arch=sm_70 -O2 -S -o test_kernels.ptx test_kernels.cu
// (no NVIDIA toolkit: the few definitions CUDA's headers would give are
// below, before the kernels).
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __noinline__ __attribute__((noinline))
#include "__clang_cuda_builtin_vars.h"
__device__ inline unsigned shfl_xor(unsigned v, int m) { unsigned r; asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(r) : "r"(v), "r"(m)); return r; }
__device__ inline unsigned ballot(int p) { unsigned r; asm volatile("{ .reg .pred %%p; setp.ne.s32 %%p, %1, 0; vote.sync.ballot.b32 %0, %%p, -1; }" : "=r"(r) : "r"(p)); return r; }
__device__ inline int atomic_add(int* p, int v) { return __nvvm_atom_add_gen_i(p, v); }

__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
#define T 16
__global__ void matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[T][T], Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0;
  for (int k = 0; k < n; k += T) {
    As[ty][tx] = A[row * n + k + tx];
    Bs[ty][tx] = B[(k + ty) * n + col];
    __syncthreads();
    for (int j = 0; j < T; ++j) acc += As[ty][j] * Bs[j][tx];
    __syncthreads();
  }
  C[row * n + col] = acc;
}
__global__ void reduce(const float* in, float* out, int n) {
  __shared__ float s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (t < w) s[t] += s[t + w];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
__global__ void warpsum(const unsigned* in, unsigned* out, unsigned* ballots) {
  unsigned v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int m = 16; m > 0; m >>= 1) v += shfl_xor(v, m);
  unsigned b = ballot(in[blockIdx.x * blockDim.x + threadIdx.x] & 1);
  if ((threadIdx.x & 31) == 0) { out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v; ballots[(blockIdx.x *
  blockDim.x + threadIdx.x) / 32] = b; }
}
__global__ void histogram(const unsigned char* in, int* bins, int n) {
  __shared__ int local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomic_add(&local[in[i] &
  15], 1);
  __syncthreads();
  if (threadIdx.x < 16) atomic_add(&bins[threadIdx.x], local[threadIdx.x]);
}
__device__ __noinline__ double fib(int n) { return n < 2 ? (double)n : fib(n - 1) + fib(n - 2) * 1.0; }
__global__ void recurse(double* out, int base) { out[threadIdx.x] = fib(base + (int)(threadIdx.x % 4)); }
struct Node { Node* next; int value; };
__global__ void walk(Node* head, int* out) {
  int sum = 0;
  for (Node* p = head; p; p = p->next) sum += p->value;
  out[threadIdx.x] = sum;
}
__global__ void diverge(int* out) {
  int t = threadIdx.x, v;
  if (t & 1) { v = t * 3; if (t & 2) v += 100; else v -= 1; }
  else v = t * 5;
  out[t] = v + 1;
}
__global__ void localarr(const int* idx, int* out) {
  int a[32];
  for (int i = 0; i < 32; ++i) a[i] = i * threadIdx.x;
  out[threadIdx.x] = a[idx[threadIdx.x] & 31];
}
extern __shared__ float dyn[];
__global__ void dynshared(float* out) {
  dyn[threadIdx.x] = threadIdx.x * 2.0f;
  __syncthreads();
  out[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x];
}
struct Params { float scale; double offset; char tag; int arr[3]; };
__global__ void bystruct(Params p, double* out) { out[threadIdx.x] = p.scale * threadIdx.x + p.offset + p.tag + p.arr[threadIdx.x % 3]; }
__global__ void endless(int* flag) { while (*(volatile int*)flag == 0) {} }
__global__ void deep(double* out, int n) { out[0] = fib(n); }
__global__ void halfbar(int* out) {
  if (threadIdx.x < 32) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
