// SPDX-License-Identifier: GPL-2.0-or-later
// The fast path's AVX2 kernels (exec_fast.cc's AVX2 build only): the
// forms the vectoriser does not find on its own over 64-bit lanes, four
// lanes (or eight floats) per vector operation. Internal to exec_fast.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpu/ptx/exec_fast.h"

namespace vgpu::ptx::exec {
// The builds of the fast path's kernels: the x86-64 baseline, AVX2+FMA, and
// AVX-512 (F, VL, BW, DQ) with FMA, whose kernels take eight 64-bit lanes
// per vector operation (exec_fast_avx512.h) where AVX2 takes four.
enum class Isa : uint8_t { base, avx2, avx512 };
}  // namespace vgpu::ptx::exec

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's avx512fintrin.h starts some intrinsics from an uninitialised
// vector (_mm512_undefined_*), which -Wmaybe-uninitialized reports where
// they are inlined (GCC bug 105593, fixed in GCC 13); the pragmas apply to
// the header's own lines.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define VGPU_FAST_X86 1
#endif

#if VGPU_FAST_X86
namespace vgpu::ptx::exec {
namespace avx2 {

__attribute__((target("avx2"))) inline __m256i load(const uint64_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
__attribute__((target("avx2"))) inline void store(uint64_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

}  // namespace avx2

// D[l] = the 64-bit product of A[l]'s and B[l]'s low 32 bits (signed or
// not), plus X[l] when X is given, & m: one vpmul(u)dq per four lanes,
// which the vectoriser does not find for these expressions.
template <bool kSigned>
__attribute__((target("avx2"))) inline void mul32_avx2(uint64_t* D, const uint64_t* A, const uint64_t* B,
                                                       const uint64_t* X, uint64_t m) {
  const __m256i mask = _mm256_set1_epi64x(static_cast<long long>(m));
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(A + l));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + l));
    __m256i v = kSigned ? _mm256_mul_epi32(a, b) : _mm256_mul_epu32(a, b);
    if (X) v = _mm256_add_epi64(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(X + l)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + l), _mm256_and_si256(v, mask));
  }
}

// f32 add, sub, mul or fma (kKind) over 64-bit lanes, four at a step: the
// operation runs on all eight floats of a vector (a lane's high word as
// well, whose result is discarded) and each lane keeps its low word,
// zero-extended, as bits(float) gives it. No narrowing and widening per
// lane; the low words' results are the scalar operation's.
template <FastKind kKind>
__attribute__((target("avx2,fma"))) inline void f32_avx2(uint64_t* D, const uint64_t* A, const uint64_t* B,
                                                         const uint64_t* X) {
  const __m256i low = _mm256_set1_epi64x(0xffff'ffffll);
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    const __m256 a = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(A + l)));
    const __m256 b = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B + l)));
    __m256 v;
    if constexpr (kKind == FastKind::add_f32) {
      v = _mm256_add_ps(a, b);
    } else if constexpr (kKind == FastKind::sub_f32) {
      v = _mm256_sub_ps(a, b);
    } else if constexpr (kKind == FastKind::mul_f32) {
      v = _mm256_mul_ps(a, b);
    } else {
      const __m256 x = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(X + l)));
      v = _mm256_fmadd_ps(a, b, x);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + l), _mm256_and_si256(_mm256_castps_si256(v), low));
  }
}

// D[l] = the kBytes element at base + O[l] (byte offsets), four lanes at a
// step with the AVX2 gathers (the AVX2 build only).
template <uint32_t kBytes>
__attribute__((target("avx2"))) inline void gather_avx2(uint64_t* D, const std::byte* base, const uint64_t* O,
                                                        bool sign) {
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(O + l));
    __m256i v;
    if constexpr (kBytes == 4) {
      const __m128i w = _mm256_i64gather_epi32(reinterpret_cast<const int*>(base), o, 1);
      v = sign ? _mm256_cvtepi32_epi64(w) : _mm256_cvtepu32_epi64(w);
    } else {
      v = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(base), o, 1);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + l), v);
  }
}

// D[l] = (A[l] op B[l]) & m for add, sub, and, or, xor (kKind), four
// lanes a step in lane order, so D may be A or B; the vectoriser's own
// loop tests at run time whether D overlaps them.
template <FastKind kKind>
__attribute__((target("avx2"))) inline __m256i binop_avx2(__m256i a, __m256i b) {
  if constexpr (kKind == FastKind::add) return _mm256_add_epi64(a, b);
  if constexpr (kKind == FastKind::sub) return _mm256_sub_epi64(a, b);
  if constexpr (kKind == FastKind::and_) return _mm256_and_si256(a, b);
  if constexpr (kKind == FastKind::or_) return _mm256_or_si256(a, b);
  return _mm256_xor_si256(a, b);
}

template <FastKind kKind>
__attribute__((target("avx2"))) inline void int_avx2(uint64_t* D, const uint64_t* A, const uint64_t* B, uint64_t m) {
  if (m == ~0ull) {
    for (uint32_t l = 0; l < kWarpSize; l += 4)
      avx2::store(D + l, binop_avx2<kKind>(avx2::load(A + l), avx2::load(B + l)));
    return;
  }
  const __m256i mask = _mm256_set1_epi64x(static_cast<long long>(m));
  for (uint32_t l = 0; l < kWarpSize; l += 4)
    avx2::store(D + l, _mm256_and_si256(binop_avx2<kKind>(avx2::load(A + l), avx2::load(B + l)), mask));
}

// Whether R[l] == R[0] + l * kBytes in every lane (a coalesced access):
// one XOR against the expected addresses and one OR per four lanes.
template <uint32_t kBytes>
__attribute__((target("avx2"))) inline bool consecutive_avx2(const uint64_t* R) {
  constexpr long long kStep = kBytes;
  const __m256i step = _mm256_set1_epi64x(4 * kStep);
  __m256i want = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(R[0])),
                                  _mm256_setr_epi64x(0, kStep, 2 * kStep, 3 * kStep));
  __m256i diff = _mm256_setzero_si256();
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    diff = _mm256_or_si256(diff, _mm256_xor_si256(avx2::load(R + l), want));
    want = _mm256_add_epi64(want, step);
  }
  return _mm256_testz_si256(diff, diff) != 0;
}

// D[l] = the 32-bit element l at p, sign- or zero-extended: one widening
// load per four lanes.
__attribute__((target("avx2"))) inline void load32_avx2(uint64_t* D, const std::byte* p, bool sign) {
  const auto* in = reinterpret_cast<const __m128i*>(p);
  if (sign)
    for (uint32_t l = 0; l < kWarpSize; l += 4) avx2::store(D + l, _mm256_cvtepi32_epi64(_mm_loadu_si128(in + l / 4)));
  else
    for (uint32_t l = 0; l < kWarpSize; l += 4) avx2::store(D + l, _mm256_cvtepu32_epi64(_mm_loadu_si128(in + l / 4)));
}

// The low words of V[0..31] as 32 consecutive 32-bit elements at p: per
// eight lanes one shuffle picks the low words of two vectors and one
// permute puts them in lane order.
__attribute__((target("avx2"))) inline void store32_avx2(std::byte* p, const uint64_t* V) {
  auto* out = reinterpret_cast<__m256i*>(p);
  for (uint32_t l = 0; l < kWarpSize; l += 8) {
    const __m256 lo = _mm256_castsi256_ps(avx2::load(V + l)), hi = _mm256_castsi256_ps(avx2::load(V + l + 4));
    // 32-bit words: lanes l, l+1, l+4, l+5 | l+2, l+3, l+6, l+7; then the 64-bit pairs in order.
    const __m256i w = _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm256_storeu_si256(out + l / 8, _mm256_permute4x64_epi64(w, _MM_SHUFFLE(3, 1, 2, 0)));
  }
}

// setp over 64-bit lanes (exec_fast.cc's comparison codes), four lanes per
// compare: D[l] = 1 or 0. Integers compare as signed 64-bit keys of the
// same order as the type (kKey, below); f32 compares the lanes' low words
// as floats with the code's ordered or unordered predicate. False for a
// code it does not take (the caller's scalar loop runs it).
template <typename Cmp>
__attribute__((target("avx2"))) inline void compare_avx2(uint64_t* D, const uint64_t* A, const uint64_t* B, Cmp cmp) {
  const __m256i one = _mm256_set1_epi64x(1);
  for (uint32_t l = 0; l < kWarpSize; l += 4)
    avx2::store(D + l, _mm256_and_si256(cmp(avx2::load(A + l), avx2::load(B + l)), one));
}

// The keys of setp_lanes: s32 its low word shifted up, u32 zero-extended, s64 itself, u64 with the sign bit flipped.
enum class Key { s32, u32, s64, u64 };

// The compare key of a lane type (int32_t, uint32_t, int64_t, uint64_t).
template <typename T>
inline constexpr Key key_of = std::is_same_v<T, int32_t>    ? Key::s32
                              : std::is_same_v<T, uint32_t> ? Key::u32
                              : std::is_same_v<T, int64_t>  ? Key::s64
                                                            : Key::u64;

// s32 and u32 compare 32-bit words: only the low word's result reaches bit 0
// of a lane (compare_avx2's AND with 1), so a lane's high word never counts
// and no shift is needed; u32 flips each word's sign bit, u64 the lane's.
template <Key kKey>
__attribute__((target("avx2"))) inline __m256i key_avx2(__m256i v) {
  if constexpr (kKey == Key::u32) return _mm256_xor_si256(v, _mm256_set1_epi32(static_cast<int>(0x8000'0000u)));
  if constexpr (kKey == Key::u64) return _mm256_xor_si256(v, _mm256_set1_epi64x(static_cast<long long>(1ull << 63)));
  return v;
}

template <Key kKey>
__attribute__((target("avx2"))) inline __m256i eq_avx2(__m256i a, __m256i b) {
  if constexpr (kKey == Key::s32 || kKey == Key::u32) return _mm256_cmpeq_epi32(a, b);
  return _mm256_cmpeq_epi64(a, b);
}

template <Key kKey>
__attribute__((target("avx2"))) inline __m256i gt_avx2(__m256i a, __m256i b) {
  if constexpr (kKey == Key::s32 || kKey == Key::u32) return _mm256_cmpgt_epi32(a, b);
  return _mm256_cmpgt_epi64(a, b);
}

// The six integer comparisons on keys (lambdas would not carry the target attribute).
#define VGPU_KEY_CMP(NAME, EXPR)                                                     \
  template <Key kKey>                                                                \
  struct NAME {                                                                      \
    __attribute__((target("avx2"))) __m256i operator()(__m256i x, __m256i y) const { \
      const __m256i a = key_avx2<kKey>(x), b = key_avx2<kKey>(y);                    \
      const __m256i ones = _mm256_set1_epi64x(-1);                                   \
      (void)ones;                                                                    \
      return EXPR;                                                                   \
    }                                                                                \
  };
VGPU_KEY_CMP(CmpEq, eq_avx2<kKey>(a, b))
VGPU_KEY_CMP(CmpNe, _mm256_xor_si256(eq_avx2<kKey>(a, b), ones))
VGPU_KEY_CMP(CmpLt, gt_avx2<kKey>(b, a))
VGPU_KEY_CMP(CmpLe, _mm256_xor_si256(gt_avx2<kKey>(a, b), ones))
VGPU_KEY_CMP(CmpGt, gt_avx2<kKey>(a, b))
VGPU_KEY_CMP(CmpGe, _mm256_xor_si256(gt_avx2<kKey>(b, a), ones))
#undef VGPU_KEY_CMP

// u32 <= and >= with no key: a <= b exactly when the unsigned minimum of
// the two words is a, a >= b when their unsigned maximum is (two vector
// operations where the keys take four).
struct CmpLeU32 {
  __attribute__((target("avx2"))) __m256i operator()(__m256i a, __m256i b) const {
    return _mm256_cmpeq_epi32(_mm256_min_epu32(a, b), a);
  }
};
struct CmpGeU32 {
  __attribute__((target("avx2"))) __m256i operator()(__m256i a, __m256i b) const {
    return _mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a);
  }
};

template <Key kKey>
__attribute__((target("avx2"))) inline bool setp_int_avx2(uint64_t* D, const uint64_t* A, const uint64_t* B,
                                                          uint8_t code) {
  switch (code) {
    case 0: compare_avx2(D, A, B, CmpEq<kKey>{}); return true;
    case 1: compare_avx2(D, A, B, CmpNe<kKey>{}); return true;
    case 2: compare_avx2(D, A, B, CmpLt<kKey>{}); return true;
    case 3:
      if constexpr (kKey == Key::u32)
        compare_avx2(D, A, B, CmpLeU32{});
      else
        compare_avx2(D, A, B, CmpLe<kKey>{});
      return true;
    case 4: compare_avx2(D, A, B, CmpGt<kKey>{}); return true;
    case 5:
      if constexpr (kKey == Key::u32)
        compare_avx2(D, A, B, CmpGeU32{});
      else
        compare_avx2(D, A, B, CmpGe<kKey>{});
      return true;
    default: return false;
  }
}

template <int kPred>
struct CmpF32 {
  __attribute__((target("avx2"))) __m256i operator()(__m256i a, __m256i b) const {
    return _mm256_castps_si256(_mm256_cmp_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), kPred));
  }
};

template <int kPred>
__attribute__((target("avx2"))) inline void setp_f32_with(uint64_t* D, const uint64_t* A, const uint64_t* B) {
  compare_avx2(D, A, B, CmpF32<kPred>{});
}

// The low words' compare decides bit 0 of each lane (the mask's low word); the high words' results are dropped.
__attribute__((target("avx2"))) inline bool setp_f32_avx2(uint64_t* D, const uint64_t* A, const uint64_t* B,
                                                          uint8_t code) {
  switch (code) {
    case 0: setp_f32_with<_CMP_EQ_OQ>(D, A, B); return true;
    case 1: setp_f32_with<_CMP_NEQ_OQ>(D, A, B); return true;
    case 2: setp_f32_with<_CMP_LT_OQ>(D, A, B); return true;
    case 3: setp_f32_with<_CMP_LE_OQ>(D, A, B); return true;
    case 4: setp_f32_with<_CMP_GT_OQ>(D, A, B); return true;
    case 5: setp_f32_with<_CMP_GE_OQ>(D, A, B); return true;
    case 6: setp_f32_with<_CMP_ORD_Q>(D, A, B); return true;
    case 7: setp_f32_with<_CMP_UNORD_Q>(D, A, B); return true;
    case 8: setp_f32_with<_CMP_EQ_UQ>(D, A, B); return true;
    case 9: setp_f32_with<_CMP_NEQ_UQ>(D, A, B); return true;
    case 10: setp_f32_with<_CMP_NGE_UQ>(D, A, B); return true;
    case 11: setp_f32_with<_CMP_NGT_UQ>(D, A, B); return true;
    case 12: setp_f32_with<_CMP_NLE_UQ>(D, A, B); return true;
    case 13: setp_f32_with<_CMP_NLT_UQ>(D, A, B); return true;
    default: return false;
  }
}

}  // namespace vgpu::ptx::exec
#endif
