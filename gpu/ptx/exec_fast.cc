// SPDX-License-Identifier: GPL-2.0-or-later
// The fast path's kernels (exec_fast.h): one switch on the FastOp's kind,
// then a plain loop over the 32 lanes that the compiler vectorises. The
// body is compiled twice, for the x86-64 baseline and for AVX2+FMA, and
// fast_runner() picks one by the CPU. Loads and stores check the whole
// warp first (aligned; on one global page, translated once through the
// page cache and so the MMU, or inside shared memory) and decline
// otherwise, before anything is written.
#include <algorithm>
#include <cstring>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define VGPU_FAST_X86 1
#endif

#include "gpu/ptx/exec_fast.h"

namespace vgpu::ptx::exec {
namespace {

#define VGPU_INLINE [[gnu::always_inline]] inline

using K = FastKind;
constexpr uint64_t kPage = 4096;

VGPU_INLINE const uint64_t* operand(const Ctx& c, uint32_t r) {
  return r & kSplatBit ? c.splats[r & ~kSplatBit].data() : c.regs + size_t{r} * kWarpSize;
}

// D[l] = EXPR for every lane (A, B, X, D and l in scope).
#define VGPU_LANES(EXPR)                                    \
  do {                                                      \
    for (uint32_t l = 0; l < kWarpSize; ++l) D[l] = (EXPR); \
  } while (0)

// A comparison code (build_fast): 0..5 ==, !=, <, <=, >, >=; 6 num, 7 nan,
// 15 never; bit 3 on 0..5: unordered (true when an operand is NaN).
template <typename T, bool kFloat>
VGPU_INLINE void setp_lanes(uint64_t* D, const uint64_t* A, const uint64_t* B, uint8_t code) {
  const auto get = [](uint64_t v) -> T {
    if constexpr (kFloat)
      return as_f32(v);
    else
      return static_cast<T>(v);
  };
  const bool unordered = (code & 8) != 0;
#define VGPU_CMP(EXPR)                                         \
  VGPU_LANES(([&] {                                            \
    const T a = get(A[l]), b = get(B[l]);                      \
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

// The window test of a generic address (exec_mem.cc's global_window).
VGPU_INLINE bool global_space(StateSpace sp, uint64_t addr) {
  if (sp != StateSpace::generic) return true;
  uint64_t win = addr & kWindowMask;
  return win != kSharedWindow && win != kLocalWindow && win != kParamWindow;
}

template <uint32_t kBytes>
using Elem = std::conditional_t<kBytes == 4, uint32_t, uint64_t>;

// ld/st of kBytes over the warp: false (nothing done) when it does not apply.
template <uint32_t kBytes, bool kStore, bool kShared>
VGPU_INLINE bool access(Ctx& c, const FastOp& f) {
  using T = Elem<kBytes>;
  const uint64_t* R = c.regs + size_t{f.a} * kWarpSize;
  const uint64_t off = f.imm, a0 = R[0] + off;
  uint64_t any = 0, diff = 0, dev = 0;  // dev: 0 when lane l is at a0 + l * kBytes (coalesced)
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    const uint64_t x = R[l] + off;
    any |= x;
    diff |= x ^ a0;
    dev |= x ^ (a0 + uint64_t{l} * kBytes);
  }
  if (any & (kBytes - 1)) return false;
  std::byte* base;
  if constexpr (kShared) {
    const size_t size = c.block->shared.size();
    uint64_t hi = any;  // at least every lane's address
    if (hi > size || size - hi < kBytes) {
      hi = 0;
      for (uint32_t l = 0; l < kWarpSize; ++l) hi = std::max(hi, R[l] + off);
      if (hi > size || size - hi < kBytes) return false;
    }
    base = c.block->shared.data();
  } else {
    if (diff >= kPage || !global_space(f.space, a0)) return false;
    MemoryFault fault;
    std::byte* p0 = c.pages.get(a0, kBytes, kStore, fault);
    if (!p0) return false;  // the executor reports the fault
    base = p0 - (a0 & (kPage - 1));
  }
  if (dev == 0) {  // coalesced: consecutive host bytes, a plain vector copy
    std::byte* p = base + (kShared ? a0 : a0 & (kPage - 1));
    if constexpr (kStore) {
      const uint64_t* V = c.regs + size_t{f.b} * kWarpSize;
      T out[kWarpSize];
      for (uint32_t l = 0; l < kWarpSize; ++l) out[l] = static_cast<T>(V[l]);
      std::memcpy(p, out, sizeof out);
    } else {
      uint64_t* D = c.regs + size_t{f.d} * kWarpSize;
      T in[kWarpSize];
      std::memcpy(in, p, sizeof in);
      if (kBytes == 4 && f.mask != 0)
        VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(in[l])}));
      else
        VGPU_LANES(uint64_t{in[l]});
    }
    return true;
  }
  // Global: every lane is on a0's page, so its offset there is its address's low bits.
  const auto at = [&](uint32_t l) {
    const uint64_t x = R[l] + off;
    return base + (kShared ? x : x & (kPage - 1));
  };
  if constexpr (kStore) {
    const uint64_t* V = c.regs + size_t{f.b} * kWarpSize;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      const T v = static_cast<T>(V[l]);
      std::memcpy(at(l), &v, sizeof v);
    }
  } else {
    uint64_t* D = c.regs + size_t{f.d} * kWarpSize;
    const bool sign = f.mask != 0;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      T v;
      std::memcpy(&v, at(l), sizeof v);
      if constexpr (kBytes == 4)
        D[l] = sign ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) : uint64_t{v};
      else
        D[l] = v;
    }
  }
  return true;
}

template <bool kStore, bool kShared>
VGPU_INLINE bool memory(Ctx& c, const FastOp& f) {
  return f.sub == 4 ? access<4, kStore, kShared>(c, f) : access<8, kStore, kShared>(c, f);
}

VGPU_INLINE bool run(Ctx& c, const FastOp& f) {
  uint64_t* D = c.regs + size_t{f.d} * kWarpSize;
  const uint64_t* A = operand(c, f.a);
  const uint64_t* B = operand(c, f.b);
  const uint64_t m = f.mask;
  switch (f.kind) {
    case K::fill: VGPU_LANES(f.imm); return true;
    case K::and_: VGPU_LANES(A[l] & B[l] & m); return true;
    case K::or_: VGPU_LANES((A[l] | B[l]) & m); return true;
    case K::xor_: VGPU_LANES((A[l] ^ B[l]) & m); return true;
    case K::add: VGPU_LANES((A[l] + B[l]) & m); return true;
    case K::sub: VGPU_LANES((A[l] - B[l]) & m); return true;
    case K::mul: VGPU_LANES((A[l] * B[l]) & m); return true;
    case K::mul_wide_s32:
      VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])} * int64_t{static_cast<int32_t>(B[l])}));
      return true;
    case K::mul_wide_u32:
      VGPU_LANES(uint64_t{static_cast<uint32_t>(A[l])} * uint64_t{static_cast<uint32_t>(B[l])});
      return true;
    case K::mad: {
      const uint64_t* X = operand(c, f.x);
      VGPU_LANES((A[l] * B[l] + X[l]) & m);
      return true;
    }
    case K::shl: VGPU_LANES((A[l] << f.imm) & m); return true;
    case K::shr_u: VGPU_LANES((A[l] & m) >> f.imm); return true;
    case K::shr_s32: VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])} >> f.imm) & m); return true;
    case K::shr_s64: VGPU_LANES(static_cast<uint64_t>(static_cast<int64_t>(A[l]) >> f.imm) & m); return true;
    case K::sext32: VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])}) & m); return true;
    case K::selp: {
      const uint64_t* X = operand(c, f.x);
      VGPU_LANES(((X[l] & 1) ^ f.imm) ? A[l] : B[l]);
      return true;
    }
    case K::setp_s32: setp_lanes<int32_t, false>(D, A, B, f.sub); break;
    case K::setp_u32: setp_lanes<uint32_t, false>(D, A, B, f.sub); break;
    case K::setp_s64: setp_lanes<int64_t, false>(D, A, B, f.sub); break;
    case K::setp_u64: setp_lanes<uint64_t, false>(D, A, B, f.sub); break;
    case K::setp_f32: setp_lanes<float, true>(D, A, B, f.sub); break;
    case K::add_f32: VGPU_LANES(bits(as_f32(A[l]) + as_f32(B[l]))); return true;
    case K::sub_f32: VGPU_LANES(bits(as_f32(A[l]) - as_f32(B[l]))); return true;
    case K::mul_f32: VGPU_LANES(bits(as_f32(A[l]) * as_f32(B[l]))); return true;
    case K::add_f64: VGPU_LANES(bits(as_f64(A[l]) + as_f64(B[l]))); return true;
    case K::mul_f64: VGPU_LANES(bits(as_f64(A[l]) * as_f64(B[l]))); return true;
    case K::fma_f32: {
      const uint64_t* X = operand(c, f.x);
      VGPU_LANES(bits(__builtin_fmaf(as_f32(A[l]), as_f32(B[l]), as_f32(X[l]))));
      return true;
    }
    case K::fma_f64: {
      const uint64_t* X = operand(c, f.x);
      VGPU_LANES(bits(__builtin_fma(as_f64(A[l]), as_f64(B[l]), as_f64(X[l]))));
      return true;
    }
    case K::sreg: {
      const uint64_t* S = c.tmp[5].data();
      c.sreg_lanes(static_cast<SReg>(f.sub), c.tmp[5]);
      c.tmp_is_imm[5] = false;
      VGPU_LANES(S[l] & m);
      return true;
    }
    case K::ld_global: return memory<false, false>(c, f);
    case K::st_global: return memory<true, false>(c, f);
    case K::ld_shared: return memory<false, true>(c, f);
    case K::st_shared: return memory<true, true>(c, f);
    case K::none: return false;
  }
  // setp: the second destination is the first's complement.
  if (f.e != kNoReg) {
    uint64_t* E = c.regs + size_t{f.e} * kWarpSize;
    for (uint32_t l = 0; l < kWarpSize; ++l) E[l] = D[l] ^ 1;
  }
  return true;
}

bool run_base(Ctx& c, const FastOp& f) { return run(c, f); }

uint32_t pred_base(const uint64_t* p) {
  uint32_t t = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l) t |= static_cast<uint32_t>(p[l] & 1) << l;
  return t;
}

#if VGPU_FAST_X86
__attribute__((target("avx2,fma"))) bool run_avx2(Ctx& c, const FastOp& f) { return run(c, f); }

// Bit 0 of four lanes to the sign, then their sign mask.
__attribute__((target("avx2"))) uint32_t pred_avx2(const uint64_t* p) {
  uint32_t t = 0;
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + l));
    t |= static_cast<uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(v, 63)))) << l;
  }
  return t;
}

bool has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

}  // namespace

FastFn fast_runner() noexcept {
#if VGPU_FAST_X86
  if (has_avx2()) return run_avx2;
#endif
  return run_base;
}

FastFn declining_runner() noexcept {
  return [](Ctx&, const FastOp&) { return false; };
}

PredFn pred_runner() noexcept {
#if VGPU_FAST_X86
  if (has_avx2()) return pred_avx2;
#endif
  return pred_base;
}

}  // namespace vgpu::ptx::exec
