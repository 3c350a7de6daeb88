// SPDX-License-Identifier: GPL-2.0-or-later
// The fast path's loads and stores (exec_fast.cc's kernels ld_global,
// st_global, ld_shared, st_shared; internal to exec_fast.cc, built in both
// of its builds). Each checks the whole warp first: every lane aligned, and
// on one global page (translated once through the page cache, so
// GlobalMemory and its bounds) or inside shared memory; otherwise it
// declines before anything is written, and the executor runs the
// instruction with its own error reporting.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "gpu/ptx/exec_fast.h"
#include "gpu/ptx/exec_fast_avx2.h"
#include "gpu/ptx/exec_fast_avx512.h"

#define VGPU_INLINE [[gnu::always_inline]] inline

// Unnamed: this header is exec_fast.cc's alone, and internal linkage keeps
// the code the compiler makes as it was inside exec_fast.cc (with external
// linkage saxpy ran 1% and matmul 3% more host instructions).
namespace vgpu::ptx::exec::fast {
namespace {

constexpr uint64_t kPage = 4096;

// The running frame's registers (the splats after them, exec_fast.h), read
// once per chain: kept in a local, since a store to guest memory
// (std::byte) may alias Ctx's fields and the compiler would load them
// again for every op.
struct Regs {
  uint64_t* regs;
  // A register field of a FastOp (a lane offset, exec_fast.h).
  uint64_t* operator[](uint32_t r) const { return regs + r; }
};

VGPU_INLINE const uint64_t* operand(const Regs& c, uint32_t r) { return c.regs + r; }

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
template <Isa kIsa, uint32_t kBytes>
VGPU_INLINE bool consecutive(const uint64_t* R) {
#if VGPU_FAST_X86
  if constexpr (kIsa == Isa::avx512) return consecutive_avx512<kBytes>(R);
  if constexpr (kIsa != Isa::base) return consecutive_avx2<kBytes>(R);
#endif
  uint64_t dev = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l) dev |= (R[l] - uint64_t{l} * kBytes) ^ R[0];
  return dev == 0;
}

// The warp's host bytes for a kBytes access at R[l] + off: every lane
// aligned and on the first lane's global page (translated once through the
// page cache, so GlobalMemory and its bounds), or inside shared memory;
// nullptr (decline) otherwise. `coalesced`: lane l at a0 + l * kBytes.
template <Isa kIsa, uint32_t kBytes, bool kStore, bool kShared>
VGPU_INLINE std::byte* warp_base(Ctx& c, const FastOp& f, const uint64_t* R, bool& coalesced) {
  constexpr uint64_t kRun = uint64_t{kWarpSize} * kBytes;
  const uint64_t off = f.imm, a0 = R[0] + off;
  coalesced = consecutive<kIsa, kBytes>(R);
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

// How many warps' runs ahead of a coalesced global load prefetch_ahead asks for.
constexpr uint64_t kPrefetchRuns = 4;

// Asks the cache for the run kPrefetchRuns runs past the one at p (a
// coalesced global load's host bytes, at offset `in_page` of its page):
// the warps of a grid mostly read consecutive runs, so that run is what a
// warp soon after this one loads. Only when it lies on the same page,
// which warp_base translated: no host address outside a translated page
// is formed. A hint: it changes no result. vgpu-bench's saxpy waited on
// these loads (docs/ptx.md, eighth pass).
template <uint32_t kBytes>
VGPU_INLINE void prefetch_ahead(const std::byte* p, uint64_t in_page) {
  constexpr uint64_t kRun = uint64_t{kWarpSize} * kBytes, kAhead = kPrefetchRuns * kRun;
  if (in_page + kAhead + kRun > kPage) return;
  for (uint64_t b = 0; b < kRun; b += kLineBytes) __builtin_prefetch(p + kAhead + b, 0, 3);
}

// ld/st of kBytes over the warp: false (nothing done) when it does not apply.
template <Isa kIsa, uint32_t kBytes, bool kStore, bool kShared>
VGPU_INLINE bool access(Ctx& c, const Regs& r, const FastOp& f) {
  using T = Elem<kBytes>;
  const uint64_t* R = r[f.a];
  bool coalesced = false;
  std::byte* base = warp_base<kIsa, kBytes, kStore, kShared>(c, f, R, coalesced);
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
    if constexpr (!kStore && !kShared) prefetch_ahead<kBytes>(p, at(0));
    if constexpr (kStore) {
      const uint64_t* V = r[f.b];
#if VGPU_FAST_X86
      if constexpr (kIsa == Isa::avx512 && kBytes == 4) {
        store32_avx512(p, V);
        return true;
      }
      if constexpr (kIsa != Isa::base && kBytes == 4) {
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
      if constexpr (kIsa == Isa::avx512 && kBytes == 4) {
        load32_avx512(D, p, sign);
        return true;
      }
      if constexpr (kIsa != Isa::base && kBytes == 4) {
        load32_avx2(D, p, sign);
        return true;
      }
#endif
      T in[kWarpSize];
      std::memcpy(in, p, sizeof in);
      if (sign)
        for (uint32_t l = 0; l < kWarpSize; ++l) D[l] = static_cast<uint64_t>(int64_t{static_cast<int32_t>(in[l])});
      else
        for (uint32_t l = 0; l < kWarpSize; ++l) D[l] = uint64_t{in[l]};
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
    if constexpr (kIsa != Isa::base) {
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

template <Isa kIsa, bool kStore, bool kShared>
VGPU_INLINE bool memory(Ctx& c, const Regs& r, const FastOp& f) {
  return f.sub == 4 ? access<kIsa, 4, kStore, kShared>(c, r, f) : access<kIsa, 8, kStore, kShared>(c, r, f);
}

}  // namespace
}  // namespace vgpu::ptx::exec::fast
