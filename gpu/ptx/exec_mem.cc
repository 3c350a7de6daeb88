// SPDX-License-Identifier: GPL-2.0-or-later
// ld, st, atom and red. Addresses resolve per lane: a generic address in
// the shared, local or param window goes to that space, anything else is
// global memory through GlobalMemory (cached per 4 KiB page for the call).
// Shared, local and param accesses are bounds-checked against their own
// arrays. Every access must be aligned to its size (a vector's whole size).
#include <algorithm>
#include <atomic>
#include <type_traits>

#include "gpu/ptx/exec.h"

namespace vgpu::ptx::exec {
namespace {

const char* space_name(StateSpace s) {
  switch (s) {
    case StateSpace::global: return "global";
    case StateSpace::shared: return "shared";
    case StateSpace::local: return "local";
    case StateSpace::param: return "param";
    case StateSpace::constant: return "const";
    default: return "generic";
  }
}

uint64_t lane_address(Ctx& c, const Operand& o, uint32_t l) {
  uint64_t base = o.reg != kNoReg ? c.reg(o.reg)[l] : 0;
  return base + c.symbol_address(o, l);
}

// Host bytes of one lane's access, or nullptr with c.error set.
std::byte* resolve(Ctx& c, const Instr& in, StateSpace sp, uint64_t addr, uint32_t bytes, bool write, uint32_t l) {
  if (addr & (bytes - 1)) {
    c.fail(ExecStatus::misaligned, in,
           std::string("misaligned ") + space_name(sp) + " access of " + std::to_string(bytes) + " bytes", addr, write);
    return nullptr;
  }
  uint64_t generic = addr;
  if (sp == StateSpace::generic) {
    uint64_t win = addr & kWindowMask;
    if (win == kSharedWindow)
      sp = StateSpace::shared, addr -= kSharedWindow;
    else if (win == kLocalWindow)
      sp = StateSpace::local, addr -= kLocalWindow;
    else if (win == kParamWindow)
      sp = StateSpace::param, addr -= kParamWindow;
    else
      sp = StateSpace::global;
  }
  auto out_of_range = [&](const char* what) -> std::byte* {
    c.fail(ExecStatus::mmu_fault, in, std::string(what) + " address " + hex(addr) + " out of range", generic, write);
    return nullptr;
  };
  switch (sp) {
    case StateSpace::global:
    case StateSpace::constant: {
      MemoryFault f;
      std::byte* p = c.pages.get(addr, bytes, write, f);
      if (!p) c.fail(ExecStatus::mmu_fault, in, "global access at " + hex(addr) + ": " + f.reason, addr, write);
      return p;
    }
    case StateSpace::shared:
      if (addr > c.block->shared.size() || c.block->shared.size() - addr < bytes) return out_of_range("shared");
      return c.block->shared.data() + addr;
    case StateSpace::local: {
      auto& mem = c.warp->local[l];
      if (addr > c.warp->local_top[l] || c.warp->local_top[l] - addr < bytes) return out_of_range("local");
      return mem.data() + addr;
    }
    case StateSpace::param: {
      if (addr < kFrameParamBase) {
        if (write || addr > c.launch.params.size() || c.launch.params.size() - addr < bytes)
          return out_of_range("param");
        return const_cast<std::byte*>(c.launch.params.data() + addr);  // read only
      }
      uint64_t off = addr - kFrameParamBase;
      if (off > c.param_stride || c.param_stride - off < bytes) return out_of_range("param");
      return c.warp->frames[c.warp->cur_depth].params.data() + size_t{l} * c.param_stride + off;
    }
    default: return nullptr;
  }
}

// The T at p, widened to 64 bits (sign-extended when T is signed).
template <typename T>
uint64_t load_widened(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<uint64_t>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v));
}

// The common 4- and 8-byte types first, each one load.
uint64_t read_elem(const std::byte* p, Type t) {
  switch (t) {
    case Type::u32:
    case Type::b32:
    case Type::f32: return load_widened<uint32_t>(p);
    case Type::u64:
    case Type::b64:
    case Type::s64:
    case Type::f64: return load_widened<uint64_t>(p);
    case Type::s32: return load_widened<int32_t>(p);
    default: break;
  }
  uint64_t v = 0;
  uint32_t n = type_bytes(t);
  std::memcpy(&v, p, n);
  return is_signed(t) ? static_cast<uint64_t>(sext(v, n)) : v;
}

// The last global page a warp instruction touched: lanes usually share it.
struct PageMemo {
  uint64_t page = ~0ull;
  std::byte* base = nullptr;
  bool write = false;
};

// resolve() with a shortcut for aligned global addresses on the memo's page.
std::byte* resolve_fast(Ctx& c, const Instr& in, uint64_t addr, uint32_t bytes, bool write, uint32_t l,
                        PageMemo& memo) {
  if ((addr >> 12) == memo.page && !(addr & (bytes - 1))) return memo.base + (addr & 0xfff);
  if (in.space == StateSpace::shared && !(addr & (bytes - 1)) && addr < c.block->shared.size() &&
      c.block->shared.size() - addr >= bytes)
    return c.block->shared.data() + addr;
  std::byte* p = resolve(c, in, in.space, addr, bytes, write, l);
  bool global = in.space == StateSpace::global ||
                (in.space == StateSpace::generic && (addr & kWindowMask) != kSharedWindow &&
                 (addr & kWindowMask) != kLocalWindow && (addr & kWindowMask) != kParamWindow);
  if (p && global) {
    memo.page = addr >> 12;
    memo.base = p - (addr & 0xfff);
  }
  return p;
}

// The warp path of a scalar ld/st (docs/ptx.md, "Execution model"): the
// address is a register plus a lane-independent offset, every active lane
// is aligned and all lie on the first lane's global page (one translation)
// or inside shared memory. The per-lane path would give the same bytes;
// it still runs when this does not apply, with its error reporting.
enum class Fast { no, done, failed };

struct WarpAccess {
  const uint64_t* r = nullptr;  // the address register
  uint64_t off = 0;             // added to it
  uint64_t a0 = 0;              // the first active lane's address
  std::byte* p0 = nullptr;      // its host bytes
  bool contiguous = false;      // all 32 lanes, lane l at a0 + l * size: p0 holds them in order
  std::byte* at(uint32_t l) const { return p0 + static_cast<int64_t>(r[l] + off - a0); }
};

bool global_window(StateSpace sp, uint64_t addr) {
  if (sp == StateSpace::global || sp == StateSpace::constant) return true;
  uint64_t win = addr & kWindowMask;
  return sp == StateSpace::generic && win != kSharedWindow && win != kLocalWindow && win != kParamWindow;
}

// A full warp whose lane l reads or writes a0 + l * bytes (a coalesced
// access: x[i] with i the thread index), aligned, on one global page or
// inside shared memory: one translation, and the lane loops run over
// consecutive host bytes (the compiler vectorises them).
Fast contiguous_access(Ctx& c, const Instr& in, uint32_t bytes, bool write, WarpAccess& w) {
  const uint64_t* r = w.r;
  const uint64_t off = w.off, a0 = w.a0;
  // Two lanes first: most accesses that are not coalesced (a broadcast, rows
  // of a tile) fail here for a few instructions.
  if (r[1] + off != a0 + bytes || r[kWarpSize - 1] + off != a0 + uint64_t{kWarpSize - 1} * bytes) return Fast::no;
  uint64_t dev = 0, expect = a0;
  for (uint32_t l = 0; l < kWarpSize; ++l, expect += bytes) dev |= (r[l] + off) ^ expect;
  if (dev != 0) return Fast::no;
  const uint64_t span = uint64_t{kWarpSize} * bytes;
  if (global_window(in.space, w.a0)) {
    if ((w.a0 & 0xfff) + span > 4096) return Fast::no;
    w.p0 = resolve(c, in, in.space, w.a0, bytes, write, 0);
    w.contiguous = w.p0 != nullptr;
    return w.p0 ? Fast::done : Fast::failed;
  }
  if (in.space != StateSpace::shared) return Fast::no;
  const size_t size = c.block->shared.size();
  if (w.a0 > size || size - w.a0 < span) return Fast::no;
  w.p0 = c.block->shared.data() + w.a0;
  w.contiguous = true;
  return Fast::done;
}

Fast warp_access(Ctx& c, const Instr& in, uint32_t m, uint32_t bytes, bool write, WarpAccess& w) {
  const Operand& a = in.src[0];
  if (a.reg == kNoReg || a.base == AddrBase::local) return Fast::no;
  w.r = c.reg(a.reg);
  w.off = c.symbol_address(a, 0);
  uint32_t l0 = static_cast<uint32_t>(std::countr_zero(m));
  w.a0 = w.r[l0] + w.off;
  if (m == kFull && !(w.a0 & (bytes - 1)))
    if (Fast f = contiguous_access(c, in, bytes, write, w); f != Fast::no) return f;
  uint64_t any = 0, diff = 0;  // any: alignment; diff: page
  for_lanes(m, [&](uint32_t l) {
    uint64_t x = w.r[l] + w.off;
    any |= x;
    diff |= x ^ w.a0;
  });
  if (any & (bytes - 1)) return Fast::no;
  if (diff < 4096 && global_window(in.space, w.a0)) {
    w.p0 = resolve(c, in, in.space, w.a0, bytes, write, l0);
    return w.p0 ? Fast::done : Fast::failed;
  }
  if (in.space != StateSpace::shared) return Fast::no;
  // `any` is at least every lane's address: a bound without a max scan when
  // it fits (the usual case for power-of-two arrays).
  size_t size = c.block->shared.size();
  uint64_t hi = any;
  if (hi > size || size - hi < bytes) {
    hi = 0;
    for_lanes(m, [&](uint32_t l) { hi = std::max(hi, w.r[l] + w.off); });
  }
  if (hi <= size && size - hi >= bytes) {
    w.p0 = c.block->shared.data() + w.a0;
    return Fast::done;
  }
  return Fast::no;
}

// Calls f with a value of the element type of t (signed types sign-extend
// when widened); false for a type without one.
template <typename F>
bool with_elem(Type t, F f) {
  switch (t) {
    case Type::b8:
    case Type::u8: f(uint8_t{}); return true;
    case Type::s8: f(int8_t{}); return true;
    case Type::b16:
    case Type::u16: f(uint16_t{}); return true;
    case Type::s16: f(int16_t{}); return true;
    case Type::b32:
    case Type::u32:
    case Type::f32: f(uint32_t{}); return true;
    case Type::s32: f(int32_t{}); return true;
    case Type::b64:
    case Type::u64:
    case Type::s64:
    case Type::f64: f(uint64_t{}); return true;
    default: return false;
  }
}

// ld/st through the warp path: Fast::no when it does not apply.
Fast ld_warp(Ctx& c, const Instr& in, uint32_t m, uint64_t* d) {
  WarpAccess w;
  Fast f = Fast::no;
  bool typed = with_elem(in.type, [&](auto t) {
    using T = decltype(t);
    f = warp_access(c, in, m, sizeof(T), false, w);
    if (f != Fast::done) return;
    if (w.contiguous) {
      for (uint32_t l = 0; l < kWarpSize; ++l) {
        T v;
        std::memcpy(&v, w.p0 + size_t{l} * sizeof(T), sizeof v);
        d[l] = static_cast<uint64_t>(v);
      }
      return;
    }
    for_lanes(m, [&](uint32_t l) {
      T v;
      std::memcpy(&v, w.at(l), sizeof v);
      d[l] = static_cast<uint64_t>(v);
    });
  });
  return typed ? f : Fast::no;
}

Fast st_warp(Ctx& c, const Instr& in, uint32_t m, const uint64_t* v) {
  WarpAccess w;
  Fast f = Fast::no;
  bool typed = with_elem(in.type, [&](auto t) {
    using T = std::make_unsigned_t<decltype(t)>;
    f = warp_access(c, in, m, sizeof(T), true, w);
    if (f != Fast::done) return;
    if (w.contiguous) {
      for (uint32_t l = 0; l < kWarpSize; ++l) {
        T x = static_cast<T>(v[l]);
        std::memcpy(w.p0 + size_t{l} * sizeof(T), &x, sizeof x);
      }
      return;
    }
    for_lanes(m, [&](uint32_t l) {
      T x = static_cast<T>(v[l]);
      std::memcpy(w.at(l), &x, sizeof x);
    });
  });
  return typed ? f : Fast::no;
}

bool ld(Ctx& c, const Instr& in, uint32_t m) {
  uint32_t eb = type_bytes(in.type), bytes = eb * in.vec;
  const Operand& a = in.src[0];
  bool vec = in.dst[0].kind == Operand::Kind::vec;
  uint64_t* d = vec ? nullptr : c.dst(in.dst[0], 4);
  PageMemo memo;
  bool ok = true;
  // One address for every lane (a kernel parameter, a module variable): read once.
  if (!vec && a.reg == kNoReg && a.base != AddrBase::local && a.base != AddrBase::fparam) {
    uint32_t l0 = static_cast<uint32_t>(std::countr_zero(m));
    const std::byte* p = resolve(c, in, in.space, lane_address(c, a, l0), bytes, false, l0);
    if (!p) return false;
    uint64_t v = read_elem(p, in.type);
    for_lanes(m, [&](uint32_t l) { d[l] = v; });
    return true;
  }
  if (!vec) {
    if (Fast f = ld_warp(c, in, m, d); f != Fast::no) return f == Fast::done;
  }
  for_lanes(m, [&](uint32_t l) {
    if (!ok) return;
    uint64_t addr = lane_address(c, a, l);
    const std::byte* p = resolve_fast(c, in, addr, bytes, false, l, memo);
    if (!p) {
      ok = false;
      return;
    }
    if (!vec) {
      d[l] = read_elem(p, in.type);
      return;
    }
    for (uint32_t i = 0; i < in.vec; ++i)
      if (in.dst[0].regs[i] != kNoReg) c.reg(in.dst[0].regs[i])[l] = read_elem(p + i * eb, in.type);
  });
  return ok;
}

bool st(Ctx& c, const Instr& in, uint32_t m) {
  uint32_t eb = type_bytes(in.type), bytes = eb * in.vec;
  bool vec = in.dst[0].kind == Operand::Kind::vec;
  const uint64_t* v = vec ? nullptr : c.src(in.dst[0], 0);
  if (!vec) {
    if (Fast f = st_warp(c, in, m, v); f != Fast::no) return f == Fast::done;
  }
  PageMemo memo;
  bool ok = true;
  for_lanes(m, [&](uint32_t l) {
    if (!ok) return;
    uint64_t addr = lane_address(c, in.src[0], l);
    std::byte* p = resolve_fast(c, in, addr, bytes, true, l, memo);
    if (!p) {
      ok = false;
      return;
    }
    if (!vec) {
      std::memcpy(p, &v[l], eb);
      return;
    }
    for (uint32_t i = 0; i < in.vec; ++i) {
      uint64_t x = in.dst[0].regs[i] != kNoReg ? c.reg(in.dst[0].regs[i])[l] : 0;
      std::memcpy(p + i * eb, &x, eb);
    }
  });
  return ok;
}

template <typename T>
T atomic_apply(T* p, AtomOp op, T b, T x, bool sign) {
  std::atomic_ref<T> r(*p);
  if constexpr (std::is_floating_point_v<T>) {
    if (op == AtomOp::add) return r.fetch_add(b);
    return r.exchange(b);
  } else {
    using S = std::make_signed_t<T>;
    switch (op) {
      case AtomOp::add: return r.fetch_add(b);
      case AtomOp::and_: return r.fetch_and(b);
      case AtomOp::or_: return r.fetch_or(b);
      case AtomOp::xor_: return r.fetch_xor(b);
      case AtomOp::exch: return r.exchange(b);
      case AtomOp::cas: {
        T expected = b;
        r.compare_exchange_strong(expected, x);
        return expected;
      }
      default: break;
    }
    T old = r.load();
    for (;;) {
      T next = old;
      switch (op) {
        case AtomOp::min:
          next = sign ? static_cast<T>(std::min(static_cast<S>(old), static_cast<S>(b))) : std::min(old, b);
          break;
        case AtomOp::max:
          next = sign ? static_cast<T>(std::max(static_cast<S>(old), static_cast<S>(b))) : std::max(old, b);
          break;
        case AtomOp::inc: next = old >= b ? 0 : static_cast<T>(old + 1); break;
        case AtomOp::dec: next = (old == 0 || old > b) ? b : static_cast<T>(old - 1); break;
        default: break;
      }
      if (r.compare_exchange_weak(old, next)) return old;
    }
  }
}

uint64_t atomic_op(std::byte* p, const Instr& in, uint64_t b, uint64_t x) {
  auto op = static_cast<AtomOp>(in.sub);
  bool sign = is_signed(in.type);
  switch (in.type) {
    case Type::f32: return bits(atomic_apply(reinterpret_cast<float*>(p), op, as_f32(b), as_f32(x), false));
    case Type::f64: return bits(atomic_apply(reinterpret_cast<double*>(p), op, as_f64(b), as_f64(x), false));
    default: break;
  }
  if (type_bytes(in.type) == 4)
    return atomic_apply(reinterpret_cast<uint32_t*>(p), op, static_cast<uint32_t>(b), static_cast<uint32_t>(x), sign);
  return atomic_apply(reinterpret_cast<uint64_t*>(p), op, b, x, sign);
}

bool atom(Ctx& c, const Instr& in, uint32_t m) {
  uint32_t bytes = type_bytes(in.type);
  const uint64_t* b = c.src(in.src[1], 1);
  const uint64_t* x = c.src(in.src[2], 2);
  uint64_t* d = in.op == Op::atom ? c.dst(in.dst[0], 4) : c.tmp[4].data();
  bool ok = true;
  for_lanes(m, [&](uint32_t l) {
    if (!ok) return;
    std::byte* p = resolve(c, in, in.space, lane_address(c, in.src[0], l), bytes, true, l);
    if (!p) {
      ok = false;
      return;
    }
    d[l] = atomic_op(p, in, b[l], x[l]);
  });
  return ok;
}

}  // namespace

ExecFn memory_executor(Op op) {
  switch (op) {
    case Op::ld: return ld;
    case Op::st: return st;
    case Op::atom:
    case Op::red: return atom;
    default: return nullptr;
  }
}

}  // namespace vgpu::ptx::exec
