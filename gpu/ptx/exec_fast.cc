// SPDX-License-Identifier: GPL-2.0-or-later
// The fast path's kernels (exec_fast.h): one switch on the FastOp's kind,
// then a loop over the 32 lanes (the AVX-512 kernels of exec_fast_avx512.h,
// the AVX2 kernels of exec_fast_avx2.h, or a plain loop the compiler
// vectorises). The body is compiled three times, for the x86-64 baseline,
// AVX2+FMA and AVX-512, and fast_runner() picks one by the CPU. Loads and
// stores are exec_fast_mem.h's.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include "gpu/ptx/exec_fast.h"
#include "gpu/ptx/exec_fast_avx2.h"
#include "gpu/ptx/exec_fast_avx512.h"
#include "gpu/ptx/exec_fast_mem.h"

namespace vgpu::ptx::exec {
namespace {

using K = FastKind;
using fast::memory;
using fast::operand;
using fast::Regs;

// D[l] = EXPR for every lane (A, B, X, D and l in scope).
#define VGPU_LANES(EXPR)                                    \
  do {                                                      \
    for (uint32_t l = 0; l < kWarpSize; ++l) D[l] = (EXPR); \
  } while (0)

// D[l] = EXPR & m, with a loop of its own for a 64-bit operation (m all ones: no AND per lane).
#define VGPU_MASKED(EXPR)   \
  do {                      \
    if (m == ~0ull)         \
      VGPU_LANES(EXPR);     \
    else                    \
      VGPU_LANES((EXPR)&m); \
  } while (0)

// A comparison code (build_fast): 0..5 ==, !=, <, <=, >, >=; 6 num, 7 nan,
// 15 never; bit 3 on 0..5: unordered (true when an operand is NaN).
// 32-bit integers compare as 64-bit signed keys with the same order (the
// low half shifted up for s32, zero-extended for u32), which the vector
// unit compares a lane at a time without narrowing.
template <typename T, bool kFloat>
VGPU_INLINE void setp_lanes(uint64_t* D, const uint64_t* A, const uint64_t* B, uint8_t code) {
  const auto get = [](uint64_t v) {
    if constexpr (kFloat)
      return as_f32(v);
    else if constexpr (std::is_same_v<T, int32_t>)
      return static_cast<int64_t>(v << 32);
    else if constexpr (std::is_same_v<T, uint32_t>)
      return static_cast<int64_t>(v & 0xffff'ffffull);
    else
      return static_cast<T>(v);
  };
  const bool unordered = (code & 8) != 0;
#define VGPU_CMP(EXPR)                                         \
  VGPU_LANES(([&] {                                            \
    const auto a = get(A[l]), b = get(B[l]);                   \
    bool r = (EXPR);                                           \
    if constexpr (kFloat) {                                    \
      const bool u = __builtin_isnan(a) || __builtin_isnan(b); \
      r = unordered ? (u || r) : (!u && r);                    \
    }                                                          \
    return static_cast<uint64_t>(r);                           \
  }()))
  switch (code & 7) {
    case 0: VGPU_CMP(a == b); return;
    case 1: VGPU_CMP(a != b); return;
    case 2: VGPU_CMP(a < b); return;
    case 3: VGPU_CMP(a <= b); return;
    case 4: VGPU_CMP(a > b); return;
    case 5: VGPU_CMP(a >= b); return;
    default: break;
  }
#undef VGPU_CMP
  if constexpr (kFloat) {
    if (code == 6) {
      VGPU_LANES(static_cast<uint64_t>(!__builtin_isnan(get(A[l])) && !__builtin_isnan(get(B[l]))));
      return;
    }
    if (code == 7) {
      VGPU_LANES(static_cast<uint64_t>(__builtin_isnan(get(A[l])) || __builtin_isnan(get(B[l]))));
      return;
    }
  }
  VGPU_LANES(uint64_t{0});
}

// setp: the AVX-512 or AVX2 compares where the build has them, else setp_lanes.
template <Isa kIsa, typename T, bool kFloat>
VGPU_INLINE void setp(uint64_t* D, const uint64_t* A, const uint64_t* B, uint8_t code) {
#if VGPU_FAST_X86
  if constexpr (kIsa == Isa::avx512) {
    bool done = false;
    if constexpr (kFloat)
      done = setp_f32_avx512(D, A, B, code);
    else
      done = setp_int_avx512<key_of<T>>(D, A, B, code);
    if (done) return;
  } else if constexpr (kIsa == Isa::avx2) {
    bool done = false;
    if constexpr (kFloat)
      done = setp_f32_avx2(D, A, B, code);
    else
      done = setp_int_avx2<key_of<T>>(D, A, B, code);
    if (done) return;
  }
#endif
  setp_lanes<T, kFloat>(D, A, B, code);
}

// mul_wide_s32/u32 (m all ones), and mul.lo/mad.lo at 32 bits (m the low
// word, which depends only on the operands' low words).
template <Isa kIsa, bool kSigned>
VGPU_INLINE void mul32(uint64_t* D, const uint64_t* A, const uint64_t* B, const uint64_t* X, uint64_t m) {
#if VGPU_FAST_X86
  if constexpr (kIsa == Isa::avx512) {
    mul32_avx512<kSigned>(D, A, B, X, m);
    return;
  }
  if constexpr (kIsa == Isa::avx2) {
    mul32_avx2<kSigned>(D, A, B, X, m);
    return;
  }
#endif
  using T = std::conditional_t<kSigned, int32_t, uint32_t>;
  using W = std::conditional_t<kSigned, int64_t, uint64_t>;
  if (X)
    VGPU_LANES((static_cast<uint64_t>(W{static_cast<T>(A[l])} * W{static_cast<T>(B[l])}) + X[l]) & m);
  else
    VGPU_LANES(static_cast<uint64_t>(W{static_cast<T>(A[l])} * W{static_cast<T>(B[l])}) & m);
}

// add, sub, and, or, xor: the AVX-512 or AVX2 kernel, or a plain loop (m all ones: no AND per lane).
template <Isa kIsa, FastKind kKind>
VGPU_INLINE void int_op(uint64_t* D, const uint64_t* A, const uint64_t* B, uint64_t m) {
#if VGPU_FAST_X86
  if constexpr (kIsa == Isa::avx512) {
    int_avx512<kKind>(D, A, B, m);
    return;
  }
  if constexpr (kIsa == Isa::avx2) {
    int_avx2<kKind>(D, A, B, m);
    return;
  }
#endif
  const auto op = [](uint64_t a, uint64_t b) {
    if constexpr (kKind == K::add) return a + b;
    if constexpr (kKind == K::sub) return a - b;
    if constexpr (kKind == K::and_) return a & b;
    if constexpr (kKind == K::or_) return a | b;
    return a ^ b;
  };
  VGPU_MASKED(op(A[l], B[l]));
}

// f32 add, sub, mul, fma at .rn: the AVX-512 or AVX2 kernel, or one scalar operation per lane.
template <Isa kIsa, FastKind kKind>
VGPU_INLINE void f32(uint64_t* D, const uint64_t* A, const uint64_t* B, const uint64_t* X) {
#if VGPU_FAST_X86
  if constexpr (kIsa == Isa::avx512) {
    f32_avx512<kKind>(D, A, B, X);
    return;
  }
  if constexpr (kIsa == Isa::avx2) {
    f32_avx2<kKind>(D, A, B, X);
    return;
  }
#endif
  if constexpr (kKind == K::add_f32)
    VGPU_LANES(bits(as_f32(A[l]) + as_f32(B[l])));
  else if constexpr (kKind == K::sub_f32)
    VGPU_LANES(bits(as_f32(A[l]) - as_f32(B[l])));
  else if constexpr (kKind == K::mul_f32)
    VGPU_LANES(bits(as_f32(A[l]) * as_f32(B[l])));
  else
    VGPU_LANES(bits(__builtin_fmaf(as_f32(A[l]), as_f32(B[l]), as_f32(X[l]))));
}

// The sources, resolved only by the kinds that read them (a fill, a special register or a memory op reads none).
#define VGPU_A const uint64_t* A = operand(r, f.a)
#define VGPU_AB                        \
  const uint64_t* A = operand(r, f.a); \
  const uint64_t* B = operand(r, f.b)
#define VGPU_ABX \
  VGPU_AB;       \
  const uint64_t* X = operand(r, f.x)
// One case per kind: resolve the sources the kind reads, run it, and
// return (a setp breaks out to write its complement).
#define VGPU_A_CASE(KIND, ...) \
  case K::KIND: {              \
    VGPU_A;                    \
    __VA_ARGS__;               \
    return true;               \
  }
#define VGPU_AB_CASE(KIND, ...) \
  case K::KIND: {               \
    VGPU_AB;                    \
    __VA_ARGS__;                \
    return true;                \
  }
#define VGPU_ABX_CASE(KIND, ...) \
  case K::KIND: {                \
    VGPU_ABX;                    \
    __VA_ARGS__;                 \
    return true;                 \
  }
#define VGPU_SETP_CASE(KIND, ...) \
  case K::KIND: {                 \
    VGPU_AB;                      \
    __VA_ARGS__;                  \
    break;                        \
  }

// Runs f as `kind` (its kind, or its chain kind). A chain (run_chain)
// passes each kind as a constant, so that only that kind's case is left.
template <Isa kIsa>
VGPU_INLINE bool run(Ctx& c, const Regs& r, const FastOp& f, FastKind kind) {
  uint64_t* D = r[f.d];
  // In locals: a store through D may alias f's fields and the block's, which the loops would read again per lane.
  const uint64_t m = f.mask, imm = f.imm;
  switch (kind) {
    // One kind per line, like a table.
    // clang-format off
    case K::fill: VGPU_LANES(imm); return true;
    case K::nop: return true;  // a chain steps over a row of nops itself (run_chain)
    VGPU_AB_CASE(and_, int_op<kIsa, K::and_>(D, A, B, m));
    VGPU_AB_CASE(or_, int_op<kIsa, K::or_>(D, A, B, m));
    VGPU_AB_CASE(xor_, int_op<kIsa, K::xor_>(D, A, B, m));
    VGPU_AB_CASE(add, int_op<kIsa, K::add>(D, A, B, m));
    VGPU_AB_CASE(sub, int_op<kIsa, K::sub>(D, A, B, m));
    VGPU_AB_CASE(mul, VGPU_LANES((A[l] * B[l]) & m));
    VGPU_AB_CASE(mul_wide_s32, mul32<kIsa, true>(D, A, B, nullptr, ~0ull));
    VGPU_AB_CASE(mul_wide_u32, mul32<kIsa, false>(D, A, B, nullptr, m));
    VGPU_AB_CASE(mul32, mul32<kIsa, false>(D, A, B, nullptr, m));
    VGPU_ABX_CASE(mad32, mul32<kIsa, false>(D, A, B, X, m));
    VGPU_ABX_CASE(mad, VGPU_LANES((A[l] * B[l] + X[l]) & m));
    VGPU_A_CASE(shl, VGPU_LANES((A[l] << imm) & m));
    VGPU_A_CASE(shr_u, VGPU_LANES((A[l] & m) >> imm));
    VGPU_A_CASE(shr_s32, VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])} >> imm) & m));
    VGPU_A_CASE(shr_s64, VGPU_LANES(static_cast<uint64_t>(static_cast<int64_t>(A[l]) >> imm) & m));
    VGPU_A_CASE(sext32, VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])}) & m));
    VGPU_ABX_CASE(selp, VGPU_LANES(((X[l] & 1) ^ imm) ? A[l] : B[l]));
    VGPU_SETP_CASE(setp_s32, setp<kIsa, int32_t, false>(D, A, B, f.sub));
    VGPU_SETP_CASE(setp_u32, setp<kIsa, uint32_t, false>(D, A, B, f.sub));
    VGPU_SETP_CASE(setp_s64, setp<kIsa, int64_t, false>(D, A, B, f.sub));
    VGPU_SETP_CASE(setp_u64, setp<kIsa, uint64_t, false>(D, A, B, f.sub));
    VGPU_SETP_CASE(setp_f32, setp<kIsa, float, true>(D, A, B, f.sub));
    VGPU_AB_CASE(add_f32, f32<kIsa, K::add_f32>(D, A, B, nullptr));
    VGPU_AB_CASE(sub_f32, f32<kIsa, K::sub_f32>(D, A, B, nullptr));
    VGPU_AB_CASE(mul_f32, f32<kIsa, K::mul_f32>(D, A, B, nullptr));
    VGPU_AB_CASE(add_f64, VGPU_LANES(bits(as_f64(A[l]) + as_f64(B[l]))));
    VGPU_AB_CASE(mul_f64, VGPU_LANES(bits(as_f64(A[l]) * as_f64(B[l]))));
    VGPU_ABX_CASE(fma_f32, f32<kIsa, K::fma_f32>(D, A, B, X));
    VGPU_ABX_CASE(fma_f64, VGPU_LANES(bits(__builtin_fma(as_f64(A[l]), as_f64(B[l]), as_f64(X[l])))));
    // clang-format on
    case K::tid: {
      const uint32_t* T = c.warp->tid.data() + size_t{f.sub} * kWarpSize;
      VGPU_LANES(uint64_t{T[l]} & m);
      return true;
    }
    case K::ctaid: {
      const uint64_t v = uint64_t{c.block->ctaid[f.sub]} & m;
      VGPU_LANES(v);
      return true;
    }
    case K::sreg: {
      const uint64_t* S = c.tmp[5].data();
      c.sreg_lanes(static_cast<SReg>(f.sub), c.tmp[5]);
      c.tmp_is_imm[5] = false;
      VGPU_LANES(S[l] & m);
      return true;
    }
    case K::ld_global: return memory<kIsa, false, false>(c, r, f);
    case K::st_global: return memory<kIsa, true, false>(c, r, f);
    case K::ld_shared: return memory<kIsa, false, true>(c, r, f);
    case K::st_shared: return memory<kIsa, true, true>(c, r, f);
    case K::none:
    case K::bra:
    case K::exit_: return false;       // a bra or an exit runs in run_chain only
    default: __builtin_unreachable();  // every kind is above (build_fast makes no other): no range check
  }
#undef VGPU_SETP_CASE
#undef VGPU_ABX_CASE
#undef VGPU_AB_CASE
#undef VGPU_A_CASE
#undef VGPU_ABX
#undef VGPU_AB
#undef VGPU_A
  // setp: the second destination is the first's complement.
  if (f.e != kNoReg) {
    uint64_t* E = r[f.e];
    for (uint32_t l = 0; l < kWarpSize; ++l) E[l] = D[l] ^ 1;
  }
  return true;
}

template <Isa kIsa>
VGPU_INLINE uint32_t guard_lanes(const uint64_t* p);

// Whether a predicate register's bit 0 is set in all 32 lanes, in none, or
// in some (a bra needs no more than that).
enum class Guard { none, all, split };
template <Isa kIsa>
VGPU_INLINE Guard guard_uniform(const uint64_t* p);

// The full warp exits (interpreter.cc's exec_ret at depth 0 and exit, then
// schedule: no lane is left to run).
VGPU_INLINE void exit_warp(Ctx& c) {
  c.warp->exited |= kFull;
  c.block->exited_threads += kWarpSize;
  c.warp->mask = 0;
}

template <>
VGPU_INLINE uint32_t guard_lanes<Isa::base>(const uint64_t* p) {
  uint32_t t = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l) t |= static_cast<uint32_t>(p[l] & 1) << l;
  return t;
}

template <>
VGPU_INLINE Guard guard_uniform<Isa::base>(const uint64_t* p) {
  const uint32_t t = guard_lanes<Isa::base>(p);
  return t == kFull ? Guard::all : t == 0 ? Guard::none : Guard::split;
}

uint32_t pred_base(const uint64_t* p) { return guard_lanes<Isa::base>(p); }
// The chain from pc_out (exec_fast.h), in each build.
uint32_t run_base(Ctx& c, uint32_t& pc_out, uint32_t n) {
  constexpr Isa kIsa = Isa::base;
#include "gpu/ptx/exec_fast_chain.inc"
}
bool one_base(Ctx& c, const FastOp& f) { return run<Isa::base>(c, Regs{c.regs}, f, f.kind); }

#if VGPU_FAST_X86
// Bit 0 of four lanes to the sign, then their sign mask.
template <>
__attribute__((target("avx2"))) inline uint32_t guard_lanes<Isa::avx2>(const uint64_t* p) {
  uint32_t t = 0;
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + l));
    t |= static_cast<uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(v, 63)))) << l;
  }
  return t;
}

// The AND and the OR of the 32 lanes, four at a step; then bit 0 of their four elements each.
template <>
__attribute__((target("avx2"))) inline Guard guard_uniform<Isa::avx2>(const uint64_t* p) {
  __m256i all = _mm256_set1_epi64x(-1), any = _mm256_setzero_si256();
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + l));
    all = _mm256_and_si256(all, v);
    any = _mm256_or_si256(any, v);
  }
  const __m256i one = _mm256_set1_epi64x(1);
  if (_mm256_testc_si256(all, one)) return Guard::all;   // bit 0 set in all four ANDs
  if (_mm256_testz_si256(any, one)) return Guard::none;  // bit 0 clear in all four ORs
  return Guard::split;
}

__attribute__((target("avx2"))) uint32_t pred_avx2(const uint64_t* p) { return guard_lanes<Isa::avx2>(p); }
__attribute__((target("avx2,fma"))) uint32_t run_avx2(Ctx& c, uint32_t& pc_out, uint32_t n) {
  constexpr Isa kIsa = Isa::avx2;
#include "gpu/ptx/exec_fast_chain.inc"
}
__attribute__((target("avx2,fma"))) bool one_avx2(Ctx& c, const FastOp& f) {
  return run<Isa::avx2>(c, Regs{c.regs}, f, f.kind);
}

template <>
VGPU_AVX512_TARGET inline Guard guard_uniform<Isa::avx512>(const uint64_t* p) {
  return static_cast<Guard>(bit0_uniform_avx512(p));
}
VGPU_AVX512_TARGET uint32_t run_avx512(Ctx& c, uint32_t& pc_out, uint32_t n) {
  constexpr Isa kIsa = Isa::avx512;
#include "gpu/ptx/exec_fast_chain.inc"
}
VGPU_AVX512_TARGET bool one_avx512(Ctx& c, const FastOp& f) { return run<Isa::avx512>(c, Regs{c.regs}, f, f.kind); }

bool has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has && fast_isa_limit() != FastIsa::baseline;
}
bool has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return has && has_avx2() && fast_isa_limit() == FastIsa::best;
}
#endif

}  // namespace

FastIsa& fast_isa_limit() noexcept {
  static FastIsa limit = FastIsa::best;
  return limit;
}

FastFn fast_runner() noexcept {
#if VGPU_FAST_X86
  if (has_avx512()) return run_avx512;
  if (has_avx2()) return run_avx2;
#endif
  return run_base;
}

FastFn declining_runner() noexcept {
  return [](Ctx&, uint32_t&, uint32_t) { return uint32_t{0}; };
}

FastOneFn fast_one_runner() noexcept {
#if VGPU_FAST_X86
  if (has_avx512()) return one_avx512;
  if (has_avx2()) return one_avx2;
#endif
  return one_base;
}

FastOneFn declining_one_runner() noexcept {
  return [](Ctx&, const FastOp&) { return false; };
}

PredFn pred_runner() noexcept {
#if VGPU_FAST_X86
  if (has_avx2()) return pred_avx2;
#endif
  return pred_base;
}

}  // namespace vgpu::ptx::exec
