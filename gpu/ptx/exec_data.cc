// SPDX-License-Identifier: GPL-2.0-or-later
// mov, selp, setp, set and cvta.
#include <cmath>
#include <type_traits>

#include "gpu/ptx/exec.h"

namespace vgpu::ptx::exec {
namespace {

bool mov(Ctx& c, const Instr& in, uint32_t m) {
  uint32_t bytes = type_bytes(in.type);
  uint64_t wm = in.type == Type::pred ? 1 : width_mask(bytes);
  if (in.src[0].kind == Operand::Kind::vec) {  // pack {a, b, ...} into d
    const Operand& v = in.src[0];
    uint32_t eb = bytes * 8 / v.count;
    uint64_t* d = c.dst(in.dst[0], 4);
    for_lanes(m, [&](uint32_t l) {
      uint64_t r = 0;
      for (uint32_t i = 0; i < v.count; ++i)
        if (v.regs[i] != kNoReg) r |= (c.reg(v.regs[i])[l] & width_mask(eb / 8)) << (i * eb);
      d[l] = r;
    });
    return true;
  }
  const uint64_t* a = c.src(in.src[0], 0);
  if (in.dst[0].kind == Operand::Kind::vec) {  // unpack a into {d0, d1, ...}
    const Operand& v = in.dst[0];
    uint32_t eb = bytes * 8 / v.count;
    for (uint32_t i = 0; i < v.count; ++i) {
      if (v.regs[i] == kNoReg) continue;
      uint64_t* d = c.reg(v.regs[i]);
      for_lanes(m, [&](uint32_t l) { d[l] = (a[l] >> (i * eb)) & width_mask(eb / 8); });
    }
    return true;
  }
  uint64_t* d = c.dst(in.dst[0], 4);
  for_lanes(m, [&](uint32_t l) { d[l] = a[l] & wm; });
  return true;
}

bool selp(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  const uint64_t* p = c.src(in.src[2], 2);
  uint64_t* d = c.dst(in.dst[0], 4);
  uint64_t neg = in.src[2].neg ? 1 : 0;
  for_lanes(m, [&](uint32_t l) { d[l] = ((p[l] & 1) ^ neg) ? a[l] : b[l]; });
  return true;
}

template <typename T>
bool compare_float(Cmp cmp, T a, T b) {
  bool un = std::isnan(a) || std::isnan(b);
  switch (cmp) {
    case Cmp::eq: return !un && a == b;
    case Cmp::ne: return !un && a != b;
    case Cmp::lt:
    case Cmp::lo: return !un && a < b;
    case Cmp::le:
    case Cmp::ls: return !un && a <= b;
    case Cmp::gt:
    case Cmp::hi: return !un && a > b;
    case Cmp::ge:
    case Cmp::hs: return !un && a >= b;
    case Cmp::equ: return un || a == b;
    case Cmp::neu: return un || a != b;
    case Cmp::ltu: return un || a < b;
    case Cmp::leu: return un || a <= b;
    case Cmp::gtu: return un || a > b;
    case Cmp::geu: return un || a >= b;
    case Cmp::num: return !un;
    case Cmp::nan: return un;
  }
  return false;
}

template <typename T>
bool compare_int(Cmp cmp, T a, T b) {
  switch (cmp) {
    case Cmp::eq: return a == b;
    case Cmp::ne: return a != b;
    case Cmp::lt:
    case Cmp::lo:
    case Cmp::ltu: return a < b;
    case Cmp::le:
    case Cmp::ls:
    case Cmp::leu: return a <= b;
    case Cmp::gt:
    case Cmp::hi:
    case Cmp::gtu: return a > b;
    case Cmp::ge:
    case Cmp::hs:
    case Cmp::geu: return a >= b;
    default: return false;
  }
}

// Calls f with cmp as a constant (std::integral_constant), so the lane
// loops it runs have no switch on the comparison.
template <typename F>
void with_cmp(Cmp cmp, F f) {
#define VGPU_CMP_CASE(x) \
  case Cmp::x: f(std::integral_constant<Cmp, Cmp::x>{}); return;
  switch (cmp) {
    VGPU_CMP_CASE(eq)
    VGPU_CMP_CASE(ne)
    VGPU_CMP_CASE(lt)
    VGPU_CMP_CASE(le)
    VGPU_CMP_CASE(gt)
    VGPU_CMP_CASE(ge)
    VGPU_CMP_CASE(lo)
    VGPU_CMP_CASE(ls)
    VGPU_CMP_CASE(hi)
    VGPU_CMP_CASE(hs)
    VGPU_CMP_CASE(equ)
    VGPU_CMP_CASE(neu)
    VGPU_CMP_CASE(ltu)
    VGPU_CMP_CASE(leu)
    VGPU_CMP_CASE(gtu)
    VGPU_CMP_CASE(geu)
    VGPU_CMP_CASE(num)
    VGPU_CMP_CASE(nan)
  }
#undef VGPU_CMP_CASE
}

// The comparison of every lane, hoisting the type and the comparison out of
// the lane loop.
template <typename F>
void compare_lanes(const Instr& in, uint32_t m, const uint64_t* a, const uint64_t* b, F out) {
  Type t = in.type2;
  uint32_t n = type_bytes(t);
  with_cmp(static_cast<Cmp>(in.sub), [&](auto k) {
    constexpr Cmp cmp = decltype(k)::value;
    if (t == Type::f32) {
      for_lanes(m, [&](uint32_t l) { out(l, compare_float(cmp, as_f32(a[l]), as_f32(b[l]))); });
    } else if (t == Type::f64) {
      for_lanes(m, [&](uint32_t l) { out(l, compare_float(cmp, as_f64(a[l]), as_f64(b[l]))); });
    } else if (n == 4 && is_signed(t)) {  // as sext(., 4): the same order
      for_lanes(m, [&](uint32_t l) {
        out(l, compare_int(cmp, static_cast<int32_t>(a[l] & 0xffffffffu), static_cast<int32_t>(b[l] & 0xffffffffu)));
      });
    } else if (n == 4) {
      for_lanes(m, [&](uint32_t l) {
        out(l, compare_int(cmp, static_cast<uint32_t>(a[l]), static_cast<uint32_t>(b[l])));
      });
    } else if (is_signed(t)) {
      for_lanes(m, [&](uint32_t l) { out(l, compare_int(cmp, sext(a[l], n), sext(b[l], n))); });
    } else {
      uint64_t wm = width_mask(n);
      for_lanes(m, [&](uint32_t l) { out(l, compare_int(cmp, a[l] & wm, b[l] & wm)); });
    }
  });
}

bool setp(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  auto bop = static_cast<BoolOp>(in.bool_op);
  const uint64_t* p = bop != BoolOp::none ? c.src(in.src[2], 2) : nullptr;
  bool pneg = in.src[2].neg;
  uint64_t* d = c.dst(in.dst[0], 4);
  uint64_t* e = in.dst[1].kind == Operand::Kind::reg ? c.reg(in.dst[1].reg) : nullptr;
  bool is_set = in.op == Op::set;
  uint64_t one = in.type == Type::f32 ? bits(1.0f) : width_mask(type_bytes(in.type));
  if (!p && !is_set) {  // plain setp
    if (e)
      compare_lanes(in, m, a, b, [&](uint32_t l, bool r) { d[l] = r, e[l] = !r; });
    else
      compare_lanes(in, m, a, b, [&](uint32_t l, bool r) { d[l] = r; });
    return true;
  }
  compare_lanes(in, m, a, b, [&](uint32_t l, bool r) {
    bool r2 = !r;
    if (p) {
      bool q = ((p[l] & 1) != 0) != pneg;
      switch (bop) {
        case BoolOp::and_: r = r && q, r2 = r2 && q; break;
        case BoolOp::or_: r = r || q, r2 = r2 || q; break;
        case BoolOp::xor_: r = r != q, r2 = r2 != q; break;
        default: break;
      }
    }
    d[l] = is_set ? (r ? one : 0) : r;
    if (e) e[l] = r2;
  });
  return true;
}

// cvta.space: space address -> generic; cvta.to.space: generic -> space.
bool cvta(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t window = window_of(in.space);
  const uint64_t* a = c.src(in.src[0], 0);
  uint64_t* d = c.dst(in.dst[0], 4);
  uint64_t wm = width_mask(type_bytes(in.type));
  bool to = (in.flags & kToSpace) != 0;
  for_lanes(m, [&](uint32_t l) { d[l] = (to ? a[l] - window : a[l] + window) & wm; });
  return true;
}

}  // namespace

ExecFn data_executor(Op op) {
  switch (op) {
    case Op::mov: return mov;
    case Op::selp: return selp;
    case Op::setp:
    case Op::set: return setp;
    case Op::cvta: return cvta;
    default: return nullptr;
  }
}

}  // namespace vgpu::ptx::exec
