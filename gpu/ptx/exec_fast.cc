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
#include <type_traits>
#include "gpu/ptx/exec_fast.h"
#include "gpu/ptx/exec_fast_avx2.h"

namespace vgpu::ptx::exec {
namespace {

#define VGPU_INLINE [[gnu::always_inline]] inline

using K = FastKind;
constexpr uint64_t kPage = 4096;

// The running frame's registers and the launch's splats, read once per
// chain: kept in locals, since a store to guest memory (std::byte) may
// alias Ctx's fields and the compiler would load them again for every op.
struct Regs {
  uint64_t* regs;
  const uint64_t* splats;
  // A register field of a FastOp (scaled by kLaneScale).
  uint64_t* operator[](uint32_t r) const { return regs + r; }
};

VGPU_INLINE const uint64_t* operand(const Regs& c, uint32_t r) {
  return r & kSplatBit ? c.splats + (r & ~kSplatBit) : c.regs + r;
}

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

// setp: the AVX2 compares where the build has them, else setp_lanes.
template <bool kAvx2, typename T, bool kFloat>
VGPU_INLINE void setp(uint64_t* D, const uint64_t* A, const uint64_t* B, uint8_t code) {
#if VGPU_FAST_X86
  if constexpr (kAvx2) {
    bool done = false;
    if constexpr (kFloat)
      done = setp_f32_avx2(D, A, B, code);
    else if constexpr (std::is_same_v<T, int32_t>)
      done = setp_int_avx2<Key::s32>(D, A, B, code);
    else if constexpr (std::is_same_v<T, uint32_t>)
      done = setp_int_avx2<Key::u32>(D, A, B, code);
    else if constexpr (std::is_same_v<T, int64_t>)
      done = setp_int_avx2<Key::s64>(D, A, B, code);
    else
      done = setp_int_avx2<Key::u64>(D, A, B, code);
    if (done) return;
  }
#endif
  setp_lanes<T, kFloat>(D, A, B, code);
}

// The window test of a generic address (exec_mem.cc's global_window).
VGPU_INLINE bool global_space(StateSpace sp, uint64_t addr) {
  if (sp != StateSpace::generic) return true;
  uint64_t win = addr & kWindowMask;
  return win != kSharedWindow && win != kLocalWindow && win != kParamWindow;
}

template <uint32_t kBytes>
using Elem = std::conditional_t<kBytes == 4, uint32_t, uint64_t>;

// A page the cache does not hold, through GlobalMemory (out of line: the
// fault it may construct stays off the hot path).
[[gnu::noinline]] std::byte* translate(Ctx& c, uint64_t va, uint32_t bytes, bool write) {
  MemoryFault fault;
  return c.pages.get(va, bytes, write, fault);
}

// Whether lane l is at R[0] + l * kBytes in every lane.
template <bool kAvx2, uint32_t kBytes>
VGPU_INLINE bool consecutive(const uint64_t* R) {
#if VGPU_FAST_X86
  if constexpr (kAvx2) return consecutive_avx2<kBytes>(R);
#endif
  uint64_t dev = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l) dev |= (R[l] - uint64_t{l} * kBytes) ^ R[0];
  return dev == 0;
}

// The warp's host bytes for a kBytes access at R[l] + off: every lane
// aligned and on the first lane's global page (translated once through the
// page cache, so GlobalMemory and its bounds), or inside shared memory;
// nullptr (decline) otherwise. `coalesced`: lane l at a0 + l * kBytes.
template <bool kAvx2, uint32_t kBytes, bool kStore, bool kShared>
VGPU_INLINE std::byte* warp_base(Ctx& c, const FastOp& f, const uint64_t* R, bool& coalesced) {
  constexpr uint64_t kRun = uint64_t{kWarpSize} * kBytes;
  const uint64_t off = f.imm, a0 = R[0] + off;
  coalesced = consecutive<kAvx2, kBytes>(R);
  if (coalesced) {  // [a0, a0 + kRun): aligned, and on one page or inside shared memory
    if (a0 & (kBytes - 1)) return nullptr;
    if constexpr (kShared) {
      const size_t size = c.block->shared.size();
      return a0 <= size && size - a0 >= kRun ? c.block->shared.data() : nullptr;
    } else {
      if ((a0 & (kPage - 1)) + kRun > kPage) return nullptr;
    }
  } else {
    uint64_t any = 0, diff = 0;  // any: at least every lane's address; diff < kPage: all on a0's page
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      const uint64_t x = R[l] + off;
      any |= x;
      diff |= x ^ a0;
    }
    if (any & (kBytes - 1)) return nullptr;
    if constexpr (kShared) {
      const size_t size = c.block->shared.size();
      if (any > size || size - any < kBytes) {  // the bound is too coarse: the greatest address
        uint64_t hi = 0;
        for (uint32_t l = 0; l < kWarpSize; ++l) hi = std::max(hi, R[l] + off);
        if (hi > size || size - hi < kBytes) return nullptr;
      }
      return c.block->shared.data();
    } else {
      if (diff >= kPage) return nullptr;
    }
  }
  // Global: one page, translated once through the page cache (GlobalMemory and its bounds).
  if (!global_space(f.space, a0)) return nullptr;
  std::byte* p0 = c.pages.cached(a0, kStore);
  if (!p0) p0 = translate(c, a0, kBytes, kStore);
  if (!p0) return nullptr;  // the executor reports the fault
  return p0 - (a0 & (kPage - 1));
}

// ld/st of kBytes over the warp: false (nothing done) when it does not apply.
template <bool kAvx2, uint32_t kBytes, bool kStore, bool kShared>
VGPU_INLINE bool access(Ctx& c, const Regs& r, const FastOp& f) {
  using T = Elem<kBytes>;
  const uint64_t* R = r[f.a];
  bool coalesced = false;
  std::byte* base = warp_base<kAvx2, kBytes, kStore, kShared>(c, f, R, coalesced);
  if (!base) return false;
  const uint64_t off = f.imm;
  // Lane l's byte offset from base (global: every lane is on a0's page, so its offset there is its low bits).
  const auto at = [&](uint32_t l) {
    const uint64_t x = R[l] + off;
    return kShared ? x : x & (kPage - 1);
  };
  const bool sign = kBytes == 4 && f.mask != 0;
  if (coalesced) {  // consecutive host bytes, a plain vector copy
    std::byte* p = base + at(0);
    if constexpr (kStore) {
      const uint64_t* V = r[f.b];
#if VGPU_FAST_X86
      if constexpr (kAvx2 && kBytes == 4) {
        store32_avx2(p, V);
        return true;
      }
#endif
      T out[kWarpSize];
      for (uint32_t l = 0; l < kWarpSize; ++l) out[l] = static_cast<T>(V[l]);
      std::memcpy(p, out, sizeof out);
    } else {
      uint64_t* D = r[f.d];
#if VGPU_FAST_X86
      if constexpr (kAvx2 && kBytes == 4) {
        load32_avx2(D, p, sign);
        return true;
      }
#endif
      T in[kWarpSize];
      std::memcpy(in, p, sizeof in);
      if (sign)
        VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(in[l])}));
      else
        VGPU_LANES(uint64_t{in[l]});
    }
    return true;
  }
  if constexpr (kStore) {
    const uint64_t* V = r[f.b];
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      const T v = static_cast<T>(V[l]);
      std::memcpy(base + at(l), &v, sizeof v);
    }
    return true;
  } else {
    uint64_t* D = r[f.d];
#if VGPU_FAST_X86
    if constexpr (kAvx2) {
      uint64_t O[kWarpSize];
      for (uint32_t l = 0; l < kWarpSize; ++l) O[l] = at(l);
      gather_avx2<kBytes>(D, base, O, sign);
      return true;
    }
#endif
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      T v;
      std::memcpy(&v, base + at(l), sizeof v);
      if constexpr (kBytes == 4)
        D[l] = sign ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) : uint64_t{v};
      else
        D[l] = v;
    }
    return true;
  }
}

template <bool kAvx2, bool kStore, bool kShared>
VGPU_INLINE bool memory(Ctx& c, const Regs& r, const FastOp& f) {
  return f.sub == 4 ? access<kAvx2, 4, kStore, kShared>(c, r, f) : access<kAvx2, 8, kStore, kShared>(c, r, f);
}

// mul_wide_s32/u32 (m all ones), and mul.lo/mad.lo at 32 bits (m the low
// word, which depends only on the operands' low words).
template <bool kAvx2, bool kSigned>
VGPU_INLINE void mul32(uint64_t* D, const uint64_t* A, const uint64_t* B, const uint64_t* X, uint64_t m) {
#if VGPU_FAST_X86
  if constexpr (kAvx2) {
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

// add, sub, and, or, xor: the AVX2 kernel, or a plain loop (m all ones: no AND per lane).
template <bool kAvx2, FastKind kKind>
VGPU_INLINE void int_op(uint64_t* D, const uint64_t* A, const uint64_t* B, uint64_t m) {
#if VGPU_FAST_X86
  if constexpr (kAvx2) {
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

// f32 add, sub, mul, fma at .rn: the AVX2 kernel, or one scalar operation per lane.
template <bool kAvx2, FastKind kKind>
VGPU_INLINE void f32(uint64_t* D, const uint64_t* A, const uint64_t* B, const uint64_t* X) {
#if VGPU_FAST_X86
  if constexpr (kAvx2) {
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

// Runs f, its `kind` (kChain: its `chain`, none for an op that does not chain).
template <bool kAvx2, bool kChain>
VGPU_INLINE bool run(Ctx& c, const Regs& r, const FastOp& f) {
  uint64_t* D = r[f.d];
  // In locals: a store through D may alias f's fields and the block's, which the loops would read again per lane.
  const uint64_t m = f.mask, imm = f.imm;
  // The sources, resolved only by the kinds that read them (a fill, a special register or a memory op reads none).
#define VGPU_A const uint64_t* A = operand(r, f.a)
#define VGPU_AB                        \
  const uint64_t* A = operand(r, f.a); \
  const uint64_t* B = operand(r, f.b)
#define VGPU_ABX \
  VGPU_AB;       \
  const uint64_t* X = operand(r, f.x)
  switch (kChain ? f.chain : f.kind) {
    case K::fill: VGPU_LANES(imm); return true;
    case K::and_: {
      VGPU_AB;
      int_op<kAvx2, K::and_>(D, A, B, m);
      return true;
    }
    case K::or_: {
      VGPU_AB;
      int_op<kAvx2, K::or_>(D, A, B, m);
      return true;
    }
    case K::xor_: {
      VGPU_AB;
      int_op<kAvx2, K::xor_>(D, A, B, m);
      return true;
    }
    case K::add: {
      VGPU_AB;
      int_op<kAvx2, K::add>(D, A, B, m);
      return true;
    }
    case K::sub: {
      VGPU_AB;
      int_op<kAvx2, K::sub>(D, A, B, m);
      return true;
    }
    case K::mul: {
      VGPU_AB;
      VGPU_LANES((A[l] * B[l]) & m);
      return true;
    }
    case K::mul_wide_s32: {
      VGPU_AB;
      mul32<kAvx2, true>(D, A, B, nullptr, ~0ull);
      return true;
    }
    case K::mul_wide_u32:
    case K::mul32: {
      VGPU_AB;
      mul32<kAvx2, false>(D, A, B, nullptr, m);
      return true;
    }
    case K::mad32: {
      VGPU_ABX;
      mul32<kAvx2, false>(D, A, B, X, m);
      return true;
    }
    case K::mad: {
      VGPU_ABX;
      VGPU_LANES((A[l] * B[l] + X[l]) & m);
      return true;
    }
    case K::shl: {
      VGPU_A;
      VGPU_LANES((A[l] << imm) & m);
      return true;
    }
    case K::shr_u: {
      VGPU_A;
      VGPU_LANES((A[l] & m) >> imm);
      return true;
    }
    case K::shr_s32: {
      VGPU_A;
      VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])} >> imm) & m);
      return true;
    }
    case K::shr_s64: {
      VGPU_A;
      VGPU_LANES(static_cast<uint64_t>(static_cast<int64_t>(A[l]) >> imm) & m);
      return true;
    }
    case K::sext32: {
      VGPU_A;
      VGPU_LANES(static_cast<uint64_t>(int64_t{static_cast<int32_t>(A[l])}) & m);
      return true;
    }
    case K::selp: {
      VGPU_ABX;
      VGPU_LANES(((X[l] & 1) ^ imm) ? A[l] : B[l]);
      return true;
    }
    case K::setp_s32: {
      VGPU_AB;
      setp<kAvx2, int32_t, false>(D, A, B, f.sub);
      break;
    }
    case K::setp_u32: {
      VGPU_AB;
      setp<kAvx2, uint32_t, false>(D, A, B, f.sub);
      break;
    }
    case K::setp_s64: {
      VGPU_AB;
      setp<kAvx2, int64_t, false>(D, A, B, f.sub);
      break;
    }
    case K::setp_u64: {
      VGPU_AB;
      setp<kAvx2, uint64_t, false>(D, A, B, f.sub);
      break;
    }
    case K::setp_f32: {
      VGPU_AB;
      setp<kAvx2, float, true>(D, A, B, f.sub);
      break;
    }
    case K::add_f32: {
      VGPU_AB;
      f32<kAvx2, K::add_f32>(D, A, B, nullptr);
      return true;
    }
    case K::sub_f32: {
      VGPU_AB;
      f32<kAvx2, K::sub_f32>(D, A, B, nullptr);
      return true;
    }
    case K::mul_f32: {
      VGPU_AB;
      f32<kAvx2, K::mul_f32>(D, A, B, nullptr);
      return true;
    }
    case K::add_f64: {
      VGPU_AB;
      VGPU_LANES(bits(as_f64(A[l]) + as_f64(B[l])));
      return true;
    }
    case K::mul_f64: {
      VGPU_AB;
      VGPU_LANES(bits(as_f64(A[l]) * as_f64(B[l])));
      return true;
    }
    case K::fma_f32: {
      VGPU_ABX;
      f32<kAvx2, K::fma_f32>(D, A, B, X);
      return true;
    }
    case K::fma_f64: {
      VGPU_ABX;
      VGPU_LANES(bits(__builtin_fma(as_f64(A[l]), as_f64(B[l]), as_f64(X[l]))));
      return true;
    }
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
    case K::ld_global: return memory<kAvx2, false, false>(c, r, f);
    case K::st_global: return memory<kAvx2, true, false>(c, r, f);
    case K::ld_shared: return memory<kAvx2, false, true>(c, r, f);
    case K::st_shared: return memory<kAvx2, true, true>(c, r, f);
    case K::none:
    case K::bra: return false;         // a bra runs in run_chain only
    default: __builtin_unreachable();  // every kind is above (build_fast makes no other): no range check
  }
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

template <bool kAvx2>
VGPU_INLINE uint32_t guard_lanes(const uint64_t* p);

// The chain from pc (exec_fast.h).
template <bool kAvx2>
VGPU_INLINE uint32_t run_chain(Ctx& c, uint32_t& pc_out, uint32_t n) {
  const Regs r{c.regs, c.splats};
  const FastOp* const ops = c.fast;
  const FastOp* f = ops + pc_out;
  uint32_t k = 0, idle = 0;  // idle: branches that no lane took (no thread instructions)
  for (; k < n; ++k) {
    if (f->chain == K::bra) {
      uint32_t t = kFull;
      if (f->x != kNoReg) t = guard_lanes<kAvx2>(r[f->x]) ^ (f->sub ? kFull : 0);
      if (t == kFull) {
        f = ops + f->imm;
      } else if (t == 0) {
        ++f;
        ++idle;
      } else {
        break;
      }
      continue;
    }
    if (!run<kAvx2, true>(c, r, *f)) break;  // none (an op that does not chain) stops it
    ++f;
  }
  pc_out = static_cast<uint32_t>(f - ops);
  c.stats.warp_instructions += k;
  c.stats.thread_instructions += uint64_t{k - idle} * kWarpSize;
  return k;
}

template <>
VGPU_INLINE uint32_t guard_lanes<false>(const uint64_t* p) {
  uint32_t t = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l) t |= static_cast<uint32_t>(p[l] & 1) << l;
  return t;
}

uint32_t pred_base(const uint64_t* p) { return guard_lanes<false>(p); }
uint32_t run_base(Ctx& c, uint32_t& pc, uint32_t n) { return run_chain<false>(c, pc, n); }
bool one_base(Ctx& c, const FastOp& f) { return run<false, false>(c, Regs{c.regs, c.splats}, f); }

#if VGPU_FAST_X86
// Bit 0 of four lanes to the sign, then their sign mask.
template <>
__attribute__((target("avx2"))) inline uint32_t guard_lanes<true>(const uint64_t* p) {
  uint32_t t = 0;
  for (uint32_t l = 0; l < kWarpSize; l += 4) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + l));
    t |= static_cast<uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(v, 63)))) << l;
  }
  return t;
}

__attribute__((target("avx2"))) uint32_t pred_avx2(const uint64_t* p) { return guard_lanes<true>(p); }
__attribute__((target("avx2,fma"))) uint32_t run_avx2(Ctx& c, uint32_t& pc, uint32_t n) {
  return run_chain<true>(c, pc, n);
}
__attribute__((target("avx2,fma"))) bool one_avx2(Ctx& c, const FastOp& f) {
  return run<true, false>(c, Regs{c.regs, c.splats}, f);
}

bool has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has && !fast_baseline_only();
}
#endif

}  // namespace

bool& fast_baseline_only() noexcept {
  static bool only = false;
  return only;
}

FastFn fast_runner() noexcept {
#if VGPU_FAST_X86
  if (has_avx2()) return run_avx2;
#endif
  return run_base;
}

FastFn declining_runner() noexcept {
  return [](Ctx&, uint32_t&, uint32_t) { return uint32_t{0}; };
}

FastOneFn fast_one_runner() noexcept {
#if VGPU_FAST_X86
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
