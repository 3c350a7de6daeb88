// SPDX-License-Identifier: GPL-2.0-or-later
// The fast path's AVX-512 kernels (exec_fast.cc's AVX-512 build only, on a
// CPU with AVX-512 F, VL, BW and DQ): the AVX2 kernels of
// exec_fast_avx2.h at eight 64-bit lanes (or sixteen floats) per vector
// operation, so a warp's register is four vectors where AVX2 takes eight.
// Each gives exactly its AVX2 kernel's bits: the same operations on the
// same words, a compare's result made from its mask register instead of
// an AND. Internal to exec_fast.cc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/ptx/exec_fast_avx2.h"

#if VGPU_FAST_X86
// The AVX-512 build's target (FMA for fma.rn.f32; AVX2 for the kernels it shares with the AVX2 build).
#define VGPU_AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))

namespace vgpu::ptx::exec {
namespace avx512 {

VGPU_AVX512_TARGET inline __m512i load(const uint64_t* p) { return _mm512_loadu_si512(p); }
VGPU_AVX512_TARGET inline void store(uint64_t* p, __m512i v) { _mm512_storeu_si512(p, v); }
// 1 in every lane whose bit in k is set, else 0 (k16: per 32-bit word, of which a lane's low word decides).
VGPU_AVX512_TARGET inline __m512i ones(__mmask8 k) { return _mm512_maskz_mov_epi64(k, _mm512_set1_epi64(1)); }
VGPU_AVX512_TARGET inline __m512i ones_low(__mmask16 k) {
  return _mm512_maskz_mov_epi32(k, _mm512_set1_epi64(1));  // words: 1, 0, 1, 0, ...: a high word stays 0
}

}  // namespace avx512

// D[l] = (A[l] op B[l]) & m for add, sub, and, or, xor (kKind), in lane order (D may be A or B).
template <FastKind kKind>
VGPU_AVX512_TARGET inline __m512i binop_avx512(__m512i a, __m512i b) {
  if constexpr (kKind == FastKind::add) return _mm512_add_epi64(a, b);
  if constexpr (kKind == FastKind::sub) return _mm512_sub_epi64(a, b);
  if constexpr (kKind == FastKind::and_) return _mm512_and_si512(a, b);
  if constexpr (kKind == FastKind::or_) return _mm512_or_si512(a, b);
  return _mm512_xor_si512(a, b);
}

template <FastKind kKind>
VGPU_AVX512_TARGET inline void int_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B, uint64_t m) {
  using namespace avx512;
  if (m == ~0ull) {
    for (uint32_t l = 0; l < kWarpSize; l += 8) store(D + l, binop_avx512<kKind>(load(A + l), load(B + l)));
    return;
  }
  const __m512i mask = _mm512_set1_epi64(static_cast<long long>(m));
  for (uint32_t l = 0; l < kWarpSize; l += 8)
    store(D + l, _mm512_and_si512(binop_avx512<kKind>(load(A + l), load(B + l)), mask));
}

// mul32_avx2 at eight lanes: the 64-bit product of the low words (signed or not), plus X[l] when given, & m.
template <bool kSigned>
VGPU_AVX512_TARGET inline void mul32_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B, const uint64_t* X,
                                            uint64_t m) {
  using namespace avx512;
  const __m512i mask = _mm512_set1_epi64(static_cast<long long>(m));
  for (uint32_t l = 0; l < kWarpSize; l += 8) {
    const __m512i a = load(A + l), b = load(B + l);
    __m512i v = kSigned ? _mm512_mul_epi32(a, b) : _mm512_mul_epu32(a, b);
    if (X) v = _mm512_add_epi64(v, load(X + l));
    store(D + l, _mm512_and_si512(v, mask));
  }
}

// f32_avx2 at sixteen floats: the operation on every word, each lane keeping its low word's result, zero-extended.
template <FastKind kKind>
VGPU_AVX512_TARGET inline void f32_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B, const uint64_t* X) {
  using namespace avx512;
  const __m512i low = _mm512_set1_epi64(0xffff'ffffll);
  for (uint32_t l = 0; l < kWarpSize; l += 8) {
    const __m512 a = _mm512_castsi512_ps(load(A + l)), b = _mm512_castsi512_ps(load(B + l));
    __m512 v;
    if constexpr (kKind == FastKind::add_f32) {
      v = _mm512_add_ps(a, b);
    } else if constexpr (kKind == FastKind::sub_f32) {
      v = _mm512_sub_ps(a, b);
    } else if constexpr (kKind == FastKind::mul_f32) {
      v = _mm512_mul_ps(a, b);
    } else {
      v = _mm512_fmadd_ps(a, b, _mm512_castsi512_ps(load(X + l)));
    }
    store(D + l, _mm512_and_si512(_mm512_castps_si512(v), low));
  }
}

// The 32-bit elements at p, sign- or zero-extended to D: one widening load per eight lanes.
VGPU_AVX512_TARGET inline void load32_avx512(uint64_t* D, const std::byte* p, bool sign) {
  const auto* in = reinterpret_cast<const __m256i*>(p);
  if (sign)
    for (uint32_t l = 0; l < kWarpSize; l += 8)
      avx512::store(D + l, _mm512_cvtepi32_epi64(_mm256_loadu_si256(in + l / 8)));
  else
    for (uint32_t l = 0; l < kWarpSize; l += 8)
      avx512::store(D + l, _mm512_cvtepu32_epi64(_mm256_loadu_si256(in + l / 8)));
}

// The low words of V[0..31] as 32 consecutive 32-bit elements at p: one truncating move (vpmovqd) per eight lanes.
VGPU_AVX512_TARGET inline void store32_avx512(std::byte* p, const uint64_t* V) {
  auto* out = reinterpret_cast<__m256i*>(p);
  for (uint32_t l = 0; l < kWarpSize; l += 8)
    _mm256_storeu_si256(out + l / 8, _mm512_cvtepi64_epi32(avx512::load(V + l)));
}

// Whether R[l] == R[0] + l * kBytes in every lane (consecutive_avx2 at eight lanes).
template <uint32_t kBytes>
VGPU_AVX512_TARGET inline bool consecutive_avx512(const uint64_t* R) {
  constexpr long long kStep = kBytes;
  const __m512i step = _mm512_set1_epi64(8 * kStep);
  __m512i want = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(R[0])),
                                  _mm512_setr_epi64(0, kStep, 2 * kStep, 3 * kStep, 4 * kStep, 5 * kStep, 6 * kStep,
                                                    7 * kStep));
  __m512i diff = _mm512_setzero_si512();
  for (uint32_t l = 0; l < kWarpSize; l += 8) {
    diff = _mm512_or_si512(diff, _mm512_xor_si512(avx512::load(R + l), want));
    want = _mm512_add_epi64(want, step);
  }
  return _mm512_test_epi64_mask(diff, diff) == 0;
}

// Integer setp (setp_int_avx2's codes 0..5 and keys) with the compare's
// predicate an immediate: s32 and u32 compare the 32-bit words (a lane's
// low word decides, ones_low), s64 and u64 the lanes.
template <Key kKey, int kPred>
VGPU_AVX512_TARGET inline void cmp_int_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B) {
  using namespace avx512;
  for (uint32_t l = 0; l < kWarpSize; l += 8) {
    const __m512i a = load(A + l), b = load(B + l);
    if constexpr (kKey == Key::s32)
      store(D + l, ones_low(_mm512_cmp_epi32_mask(a, b, kPred)));
    else if constexpr (kKey == Key::u32)
      store(D + l, ones_low(_mm512_cmp_epu32_mask(a, b, kPred)));
    else if constexpr (kKey == Key::s64)
      store(D + l, ones(_mm512_cmp_epi64_mask(a, b, kPred)));
    else
      store(D + l, ones(_mm512_cmp_epu64_mask(a, b, kPred)));
  }
}

template <Key kKey>
VGPU_AVX512_TARGET inline bool setp_int_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B, uint8_t code) {
  switch (code) {
    case 0: cmp_int_avx512<kKey, _MM_CMPINT_EQ>(D, A, B); return true;
    case 1: cmp_int_avx512<kKey, _MM_CMPINT_NE>(D, A, B); return true;
    case 2: cmp_int_avx512<kKey, _MM_CMPINT_LT>(D, A, B); return true;
    case 3: cmp_int_avx512<kKey, _MM_CMPINT_LE>(D, A, B); return true;
    case 4: cmp_int_avx512<kKey, _MM_CMPINT_NLE>(D, A, B); return true;  // >
    case 5: cmp_int_avx512<kKey, _MM_CMPINT_NLT>(D, A, B); return true;  // >=
    default: return false;
  }
}

// f32 setp on the low words with the code's ordered or unordered predicate (setp_f32_avx2's table).
template <int kPred>
VGPU_AVX512_TARGET inline void cmp_f32_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B) {
  using namespace avx512;
  for (uint32_t l = 0; l < kWarpSize; l += 8)
    store(D + l,
          ones_low(_mm512_cmp_ps_mask(_mm512_castsi512_ps(load(A + l)), _mm512_castsi512_ps(load(B + l)), kPred)));
}

VGPU_AVX512_TARGET inline bool setp_f32_avx512(uint64_t* D, const uint64_t* A, const uint64_t* B, uint8_t code) {
  switch (code) {
    case 0: cmp_f32_avx512<_CMP_EQ_OQ>(D, A, B); return true;
    case 1: cmp_f32_avx512<_CMP_NEQ_OQ>(D, A, B); return true;
    case 2: cmp_f32_avx512<_CMP_LT_OQ>(D, A, B); return true;
    case 3: cmp_f32_avx512<_CMP_LE_OQ>(D, A, B); return true;
    case 4: cmp_f32_avx512<_CMP_GT_OQ>(D, A, B); return true;
    case 5: cmp_f32_avx512<_CMP_GE_OQ>(D, A, B); return true;
    case 6: cmp_f32_avx512<_CMP_ORD_Q>(D, A, B); return true;
    case 7: cmp_f32_avx512<_CMP_UNORD_Q>(D, A, B); return true;
    case 8: cmp_f32_avx512<_CMP_EQ_UQ>(D, A, B); return true;
    case 9: cmp_f32_avx512<_CMP_NEQ_UQ>(D, A, B); return true;
    case 10: cmp_f32_avx512<_CMP_NGE_UQ>(D, A, B); return true;
    case 11: cmp_f32_avx512<_CMP_NGT_UQ>(D, A, B); return true;
    case 12: cmp_f32_avx512<_CMP_NLE_UQ>(D, A, B); return true;
    case 13: cmp_f32_avx512<_CMP_NLT_UQ>(D, A, B); return true;
    default: return false;
  }
}

// Bit 0 of a predicate register's 32 lanes: 0 clear in all, 1 set in all, 2 some of each (exec_fast.cc's Guard).
VGPU_AVX512_TARGET inline int bit0_uniform_avx512(const uint64_t* p) {
  using namespace avx512;
  __m512i all = _mm512_set1_epi64(-1), any = _mm512_setzero_si512();
  for (uint32_t l = 0; l < kWarpSize; l += 8) {
    const __m512i v = load(p + l);
    all = _mm512_and_si512(all, v);
    any = _mm512_or_si512(any, v);
  }
  const __m512i one = _mm512_set1_epi64(1);
  if (_mm512_test_epi64_mask(all, one) == 0xff) return 1;
  if (_mm512_test_epi64_mask(any, one) == 0) return 0;
  return 2;
}

}  // namespace vgpu::ptx::exec
#endif
