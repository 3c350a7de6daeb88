// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu_cuda.h: the little of CUDA C that the corpus kernels use, for
// clang-14 without NVIDIA's headers (-nocudainc -nocudalib). Under nvcc it
// adds nothing: nvcc brings its own builtins (docs: cuda/corpus/README.md).
//
// Shuffles, votes and the warp barrier are one-line inline PTX: clang-14's
// __nvvm_shfl_sync_* / __nvvm_vote_* builtins need the ptx60 target feature,
// which the plain command line does not enable
// (/work/shared/design/user-kernels.md).
#ifndef VGPU_CUDA_CORPUS_VGPU_CUDA_H
#define VGPU_CUDA_CORPUS_VGPU_CUDA_H

#if !defined(__NVCC__)

#if !defined(__clang__) || !defined(__CUDA__)
#error "vgpu_cuda.h: compile with clang -x cuda (or with nvcc)"
#endif

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))

#include <__clang_cuda_builtin_vars.h>

#define VGPU_DEV static __device__ __forceinline__

// Barriers: __syncthreads() is a clang builtin already (bar.sync 0);
// __syncwarp is bar.warp.sync.
VGPU_DEV void __syncwarp(unsigned mask = 0xffffffffu) { asm volatile("bar.warp.sync %0;" ::"r"(mask) : "memory"); }

// Atomics over clang's generic-address builtins; clang's address-space
// inference turns them into atom.global / atom.shared where it can.
VGPU_DEV int atomicAdd(int* p, int v) { return __nvvm_atom_add_gen_i(p, v); }
VGPU_DEV unsigned atomicAdd(unsigned* p, unsigned v) {
  return static_cast<unsigned>(__nvvm_atom_add_gen_i(reinterpret_cast<int*>(p), static_cast<int>(v)));
}
VGPU_DEV float atomicAdd(float* p, float v) { return __nvvm_atom_add_gen_f(p, v); }
VGPU_DEV unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return static_cast<unsigned long long>(
      __nvvm_atom_add_gen_ll(reinterpret_cast<long long*>(p), static_cast<long long>(v)));
}
VGPU_DEV int atomicCAS(int* p, int cmp, int v) { return __nvvm_atom_cas_gen_i(p, cmp, v); }
VGPU_DEV unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
  return static_cast<unsigned>(
      __nvvm_atom_cas_gen_i(reinterpret_cast<int*>(p), static_cast<int>(cmp), static_cast<int>(v)));
}
VGPU_DEV unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  return static_cast<unsigned long long>(
      __nvvm_atom_cas_gen_ll(reinterpret_cast<long long*>(p), static_cast<long long>(cmp), static_cast<long long>(v)));
}
VGPU_DEV int atomicMax(int* p, int v) { return __nvvm_atom_max_gen_i(p, v); }
VGPU_DEV unsigned atomicMax(unsigned* p, unsigned v) { return __nvvm_atom_max_gen_ui(p, v); }
VGPU_DEV int atomicMin(int* p, int v) { return __nvvm_atom_min_gen_i(p, v); }
VGPU_DEV unsigned atomicMin(unsigned* p, unsigned v) { return __nvvm_atom_min_gen_ui(p, v); }
VGPU_DEV int atomicExch(int* p, int v) { return __nvvm_atom_xchg_gen_i(p, v); }
VGPU_DEV unsigned atomicExch(unsigned* p, unsigned v) {
  return static_cast<unsigned>(__nvvm_atom_xchg_gen_i(reinterpret_cast<int*>(p), static_cast<int>(v)));
}
// atomicInc: old >= limit ? 0 : old + 1 (atom.inc.u32).
VGPU_DEV unsigned atomicInc(unsigned* p, unsigned limit) { return __nvvm_atom_inc_gen_ui(p, limit); }

// Bit casts and correctly rounded math (CUDA's intrinsic names).
VGPU_DEV float __int_as_float(int v) { return __builtin_bit_cast(float, v); }
VGPU_DEV int __float_as_int(float v) { return __builtin_bit_cast(int, v); }
VGPU_DEV unsigned __float_as_uint(float v) { return __builtin_bit_cast(unsigned, v); }
VGPU_DEV long long __double_as_longlong(double v) { return __builtin_bit_cast(long long, v); }
VGPU_DEV double __dsqrt_rn(double v) { return __nvvm_sqrt_rn_d(v); }
VGPU_DEV float __fsqrt_rn(float v) { return __nvvm_sqrt_rn_f(v); }
VGPU_DEV double __fma_rn(double a, double b, double c) { return __nvvm_fma_rn_d(a, b, c); }
VGPU_DEV float __fmaf_rn(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }

// Warp shuffles: c packs the segment mask ((32 - width) << 8) and the
// clamp (31 for idx/bfly/down), as CUDA's own headers do.
#define VGPU_SHFL(name, mode, clamp)                                                                          \
  VGPU_DEV int name(unsigned mask, int v, int b, int width = 32) {                                            \
    int r;                                                                                                    \
    int c = ((32 - width) << 8) | (clamp);                                                                    \
    asm volatile("shfl.sync." mode ".b32 %0, %1, %2, %3, %4;" : "=r"(r) : "r"(v), "r"(b), "r"(c), "r"(mask)); \
    return r;                                                                                                 \
  }                                                                                                           \
  VGPU_DEV unsigned name(unsigned mask, unsigned v, int b, int width = 32) {                                  \
    return static_cast<unsigned>(name(mask, static_cast<int>(v), b, width));                                  \
  }                                                                                                           \
  VGPU_DEV float name(unsigned mask, float v, int b, int width = 32) {                                        \
    return __int_as_float(name(mask, __float_as_int(v), b, width));                                           \
  }
VGPU_SHFL(__shfl_sync, "idx", 0x1f)
VGPU_SHFL(__shfl_xor_sync, "bfly", 0x1f)
VGPU_SHFL(__shfl_down_sync, "down", 0x1f)
#undef VGPU_SHFL

// Votes: the predicate is set from the int, the result read back as an int.
VGPU_DEV unsigned __ballot_sync(unsigned mask, int pred) {
  unsigned r;
  asm volatile("{ .reg .pred p; setp.ne.s32 p, %1, 0; vote.sync.ballot.b32 %0, p, %2; }"
               : "=r"(r)
               : "r"(pred), "r"(mask));
  return r;
}
VGPU_DEV int __all_sync(unsigned mask, int pred) {
  int r;
  asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; vote.sync.all.pred q, p, %2; selp.s32 %0, 1, 0, q; }"
               : "=r"(r)
               : "r"(pred), "r"(mask));
  return r;
}
VGPU_DEV int __any_sync(unsigned mask, int pred) {
  int r;
  asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; vote.sync.any.pred q, p, %2; selp.s32 %0, 1, 0, q; }"
               : "=r"(r)
               : "r"(pred), "r"(mask));
  return r;
}

#undef VGPU_DEV

#endif  // !__NVCC__

#endif  // VGPU_CUDA_CORPUS_VGPU_CUDA_H
