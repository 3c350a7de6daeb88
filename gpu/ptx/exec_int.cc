// SPDX-License-Identifier: GPL-2.0-or-later
// Integer and bit instructions. Operands are read at the instruction's
// width (sign- or zero-extended to 64 bits), results written at that width.
// Division by zero gives all ones (remainder: the dividend); INT_MIN / -1
// gives INT_MIN (remainder 0); shifts of the width or more give 0 (or the
// sign for shr.s), as PTX says.
#include "gpu/ptx/exec.h"
#include "ptx/op_groups.h"

namespace vgpu::ptx::exec {
namespace {

using u128 = unsigned __int128;
using i128 = __int128;

struct Width {
  uint32_t bytes, bits;
  unsigned sh;
  bool sign;
  uint64_t mask;
  constexpr explicit Width(Type t)
      : bytes(type_bytes(t)),
        bits(bytes * 8),
        sh(64 - bits),
        sign(is_signed(t)),
        mask(t == Type::pred ? 1 : width_mask(bytes)) {}
  constexpr uint64_t norm(uint64_t v) const {
    return sign ? static_cast<uint64_t>(static_cast<int64_t>(v << sh) >> sh) : (v << sh) >> sh;
  }
};

// lanes() for one type T (Type::none: the instruction's, read at run time);
// a constant T folds the width out of the lane loop.
template <Type T, int N, typename F>
bool typed_lanes(Ctx& c, const Instr& in, uint32_t m, F f) {
  const Width w(T == Type::none ? in.type : T);
  const uint64_t* s[4] = {};
  uint64_t* d = c.dst(in.dst[0], 4);
  if (N == 2 && in.src[0].kind == Operand::Kind::reg && in.src[1].kind == Operand::Kind::imm) {  // r op imm
    const uint64_t* a = c.reg(in.src[0].reg);
    uint64_t b = w.norm(in.src[1].imm);
    for_lanes(m, [&](uint32_t l) { d[l] = f(w.norm(a[l]), b, 0, 0, w) & w.mask; });
    return true;
  }
  for (int i = 0; i < N; ++i) s[i] = c.src(in.src[i], i);
  for_lanes(m, [&](uint32_t l) {
    uint64_t a = w.norm(s[0][l]);
    uint64_t b = N > 1 ? w.norm(s[1][l]) : 0;
    uint64_t x = N > 2 ? s[2][l] : 0;
    uint64_t y = N > 3 ? s[3][l] : 0;
    d[l] = f(a, b, x, y, w) & w.mask;
  });
  return true;
}

// f.template operator()<T>() with T the type an integer instruction of
// type `t` computes as: s32, u32 (b32 too), s64, u64 (b64 too), else
// Type::none (the width read from the instruction at run time).
template <typename F>
bool by_int_type(Type t, F&& f) {
  switch (t) {
    case Type::s32: return f.template operator()<Type::s32>();
    case Type::u32:
    case Type::b32: return f.template operator()<Type::u32>();
    case Type::s64: return f.template operator()<Type::s64>();
    case Type::u64:
    case Type::b64: return f.template operator()<Type::u64>();
    default: return f.template operator()<Type::none>();
  }
}

// d = f(a, b, c, e) over the lanes, operands normalised to the type's width;
// the common 32- and 64-bit types get their own loops.
template <int N, typename F>
bool lanes(Ctx& c, const Instr& in, uint32_t m, F f) {
  return by_int_type(in.type, [&]<Type T>() { return typed_lanes<T, N>(c, in, m, f); });
}

bool add(Ctx& c, const Instr& in, uint32_t m) {
  if (is_float(in.type)) return float_arith(c, in, m);
  if (!(in.flags & (kCarryIn | kCarryOut))) {
    if (in.op == Op::sub)
      return lanes<2>(c, in, m, [](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width&) { return a - b; });
    return lanes<2>(c, in, m, [](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width&) { return a + b; });
  }
  // Carry chains: lane by lane with the carry flag.
  Warp& wp = *c.warp;
  bool sub = in.op == Op::sub;
  Width w(in.type);
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  uint64_t* d = c.dst(in.dst[0], 4);
  for_lanes(m, [&](uint32_t l) {
    u128 cin = (in.flags & kCarryIn) ? (wp.carry >> l & 1) : 0;
    u128 x = a[l] & w.mask, y = b[l] & w.mask;
    u128 r = sub ? x - y - cin : x + y + cin;
    d[l] = static_cast<uint64_t>(r) & w.mask;
    if (in.flags & kCarryOut) {
      bool cf = sub ? (x < y + cin) : ((r >> w.bits) & 1) != 0;
      wp.carry = (wp.carry & ~(1u << l)) | (cf ? 1u << l : 0);
    }
  });
  return true;
}

uint64_t mul_hi(uint64_t a, uint64_t b, const Width& w) {
  if (w.bits == 64)
    return w.sign ? static_cast<uint64_t>((static_cast<i128>(static_cast<int64_t>(a)) * static_cast<int64_t>(b)) >> 64)
                  : static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64);
  uint64_t p = w.sign ? static_cast<uint64_t>(static_cast<int64_t>(a) * static_cast<int64_t>(b)) : a * b;
  return w.sign ? static_cast<uint64_t>(static_cast<int64_t>(p) >> w.bits) : p >> w.bits;
}

uint64_t product(uint64_t a, uint64_t b, uint8_t mode, const Width& w) {
  switch (static_cast<MulMode>(mode)) {
    case MulMode::hi: return mul_hi(a, b, w);
    case MulMode::wide:
      return w.sign ? static_cast<uint64_t>(static_cast<int64_t>(a) * static_cast<int64_t>(b)) : a * b;
    default: return a * b;
  }
}

template <Type T>
bool typed_mul(Ctx& c, const Instr& in, uint32_t m) {
  const Width w(T == Type::none ? in.type : T);
  uint64_t dmask = in.sub == static_cast<uint8_t>(MulMode::wide) ? width_mask(w.bytes * 2) : w.mask;
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  uint64_t* d = c.dst(in.dst[0], 4);
  uint8_t mode = in.sub;
  for_lanes(m, [&](uint32_t l) { d[l] = product(w.norm(a[l]), w.norm(b[l]), mode, w) & dmask; });
  return true;
}

bool mul(Ctx& c, const Instr& in, uint32_t m) {
  switch (in.type) {
    case Type::f32:
    case Type::f64: return float_arith(c, in, m);
    default: return by_int_type(in.type, [&]<Type T>() { return typed_mul<T>(c, in, m); });
  }
}

// mad without a carry: the sum at the result's width, nothing per lane but that.
template <Type T>
bool plain_mad(Ctx& c, const Instr& in, uint32_t m) {
  const Width w(T == Type::none ? in.type : T);
  uint64_t dmask = width_mask(in.sub == static_cast<uint8_t>(MulMode::wide) ? w.bytes * 2 : w.bytes);
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  const uint64_t* x = c.src(in.src[2], 2);
  uint64_t* d = c.dst(in.dst[0], 4);
  uint8_t mode = in.sub;
  for_lanes(m, [&](uint32_t l) {
    d[l] = ((product(w.norm(a[l]), w.norm(b[l]), mode, w) & dmask) + (x[l] & dmask)) & dmask;
  });
  return true;
}

bool mad(Ctx& c, const Instr& in, uint32_t m) {
  if (is_float(in.type)) return float_arith(c, in, m);
  if (!(in.flags & (kCarryIn | kCarryOut)))
    return by_int_type(in.type, [&]<Type T>() { return plain_mad<T>(c, in, m); });
  Width w(in.type);
  bool wide = in.sub == static_cast<uint8_t>(MulMode::wide);
  uint32_t rbytes = wide ? w.bytes * 2 : w.bytes;
  uint64_t dmask = width_mask(rbytes);
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  const uint64_t* x = c.src(in.src[2], 2);
  uint64_t* d = c.dst(in.dst[0], 4);
  Warp& wp = *c.warp;
  for_lanes(m, [&](uint32_t l) {
    u128 p = product(w.norm(a[l]), w.norm(b[l]), in.sub, w) & dmask;
    u128 cin = (in.flags & kCarryIn) ? (wp.carry >> l & 1) : 0;
    u128 r = p + (x[l] & dmask) + cin;
    d[l] = static_cast<uint64_t>(r) & dmask;
    if (in.flags & kCarryOut) {
      bool cf = ((r >> (rbytes * 8)) & 1) != 0;
      wp.carry = (wp.carry & ~(1u << l)) | (cf ? 1u << l : 0);
    }
  });
  return true;
}

uint64_t mul24(uint64_t a, uint64_t b, uint8_t mode, const Width& w) {
  int64_t x = w.sign ? sext(a & 0xffffff, 3) : static_cast<int64_t>(a & 0xffffff);
  int64_t y = w.sign ? sext(b & 0xffffff, 3) : static_cast<int64_t>(b & 0xffffff);
  uint64_t p = static_cast<uint64_t>(x * y);
  return mode == static_cast<uint8_t>(MulMode::hi) ? p >> 16 : p;
}

bool div(Ctx& c, const Instr& in, uint32_t m) {
  if (is_float(in.type)) return float_arith(c, in, m);
  bool rem = in.op == Op::rem;
  if (is_signed(in.type))
    return lanes<2>(c, in, m, [rem](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width&) -> uint64_t {
      auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
      if (y == 0) return rem ? a : ~0ull;
      if (y == -1) return rem ? 0 : 0 - a;
      return static_cast<uint64_t>(rem ? x % y : x / y);
    });
  return lanes<2>(c, in, m, [rem](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width&) -> uint64_t {
    if (b == 0) return rem ? a : ~0ull;
    return rem ? a % b : a / b;
  });
}

bool minmax(Ctx& c, const Instr& in, uint32_t m) {
  if (is_float(in.type)) return float_arith(c, in, m);
  bool mx = in.op == Op::max;
  if (is_signed(in.type))
    return lanes<2>(c, in, m, [mx](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width&) {
      auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
      return static_cast<uint64_t>(mx ? std::max(x, y) : std::min(x, y));
    });
  return lanes<2>(c, in, m, [mx](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width&) {
    return mx ? std::max(a, b) : std::min(a, b);
  });
}

uint64_t bfe(uint64_t a, uint64_t b, uint64_t x, const Width& w) {
  uint32_t pos = b & 0xff, len = x & 0xff, msb = w.bits - 1;
  uint64_t v = a & w.mask;
  bool sbit = w.sign && len != 0 && ((v >> std::min(pos + len - 1, msb)) & 1);
  uint64_t r = 0;
  for (uint32_t i = 0; i < w.bits; ++i) {
    bool bit = (i < len && pos + i <= msb) ? ((v >> (pos + i)) & 1) : sbit;
    r |= static_cast<uint64_t>(bit) << i;
  }
  return r;
}

uint64_t bfi(uint64_t a, uint64_t b, uint64_t x, uint64_t y, const Width& w) {
  uint32_t pos = x & 0xff, len = y & 0xff;
  uint64_t r = b;
  for (uint32_t i = 0; i < len && pos + i < w.bits; ++i) r = (r & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
  return r;
}

uint64_t prmt(uint64_t a, uint64_t b, uint64_t sel) {
  uint64_t bytes = (a & 0xffffffff) | (b & 0xffffffff) << 32, r = 0;
  for (int i = 0; i < 4; ++i) {
    uint64_t s = (sel >> (4 * i)) & 0xf;
    uint64_t byte = (bytes >> (8 * (s & 7))) & 0xff;
    if (s & 8) byte = (byte & 0x80) ? 0xff : 0;
    r |= byte << (8 * i);
  }
  return r;
}

uint64_t brev(uint64_t a, uint32_t bits) {
  uint64_t r = 0;
  for (uint32_t i = 0; i < bits; ++i) r |= ((a >> i) & 1) << (bits - 1 - i);
  return r;
}

// shl and shr for one type T (Type::none: the instruction's).
template <Type T>
bool shift(Ctx& c, const Instr& in, uint32_t m) {
  const Width w(T == Type::none ? in.type : T);
  const uint64_t* a = c.src(in.src[0], 0);
  const uint64_t* b = c.src(in.src[1], 1);
  uint64_t* d = c.dst(in.dst[0], 4);
  if (in.op == Op::shl) {
    for_lanes(m, [&](uint32_t l) {
      uint64_t s = b[l] & 0xffffffff;
      d[l] = s >= w.bits ? 0 : (a[l] << s) & w.mask;
    });
    return true;
  }
  for_lanes(m, [&](uint32_t l) {
    uint64_t s = std::min<uint64_t>(b[l] & 0xffffffff, w.bits);
    uint64_t v = w.norm(a[l]);
    uint64_t r = w.sign ? static_cast<uint64_t>(static_cast<int64_t>(v) >> std::min<uint64_t>(s, 63))
                        : (s >= 64 ? 0 : v >> s);
    d[l] = r & w.mask;
  });
  return true;
}

bool bits_op(Ctx& c, const Instr& in, uint32_t m) {
  using W = const Width&;
  switch (in.op) {
    case Op::and_: return lanes<2>(c, in, m, [](uint64_t a, uint64_t b, uint64_t, uint64_t, W) { return a & b; });
    case Op::or_: return lanes<2>(c, in, m, [](uint64_t a, uint64_t b, uint64_t, uint64_t, W) { return a | b; });
    case Op::xor_: return lanes<2>(c, in, m, [](uint64_t a, uint64_t b, uint64_t, uint64_t, W) { return a ^ b; });
    case Op::not_: return lanes<1>(c, in, m, [](uint64_t a, uint64_t, uint64_t, uint64_t, W) { return ~a; });
    case Op::cnot:
      return lanes<1>(c, in, m,
                      [](uint64_t a, uint64_t, uint64_t, uint64_t, W w) -> uint64_t { return (a & w.mask) == 0; });
    case Op::shl:
    case Op::shr: return by_int_type(in.type, [&]<Type T>() { return shift<T>(c, in, m); });
    case Op::popc:
      return lanes<1>(c, in, m, [](uint64_t a, uint64_t, uint64_t, uint64_t, W w) -> uint64_t {
        return static_cast<uint64_t>(std::popcount(a & w.mask));
      });
    case Op::clz:
      return lanes<1>(c, in, m, [](uint64_t a, uint64_t, uint64_t, uint64_t, W w) -> uint64_t {
        return w.bits - static_cast<uint64_t>(std::bit_width(a & w.mask));
      });
    case Op::brev:
      return lanes<1>(c, in, m, [](uint64_t a, uint64_t, uint64_t, uint64_t, W w) { return brev(a, w.bits); });
    case Op::bfe:
      return lanes<3>(c, in, m, [](uint64_t a, uint64_t b, uint64_t x, uint64_t, W w) { return bfe(a, b, x, w); });
    case Op::bfi:
      return lanes<4>(c, in, m, [](uint64_t a, uint64_t b, uint64_t x, uint64_t y, W w) { return bfi(a, b, x, y, w); });
    case Op::prmt:
      return lanes<3>(c, in, m, [](uint64_t a, uint64_t b, uint64_t x, uint64_t, W) { return prmt(a, b, x); });
    default: return false;
  }
}

bool unary(Ctx& c, const Instr& in, uint32_t m) {
  if (is_float(in.type)) return float_arith(c, in, m);
  if (in.op == Op::abs)
    return lanes<1>(c, in, m, [](uint64_t a, uint64_t, uint64_t, uint64_t, const Width& w) {
      return w.sign && static_cast<int64_t>(a) < 0 ? 0 - a : a;
    });
  return lanes<1>(c, in, m, [](uint64_t a, uint64_t, uint64_t, uint64_t, const Width&) { return 0 - a; });
}

bool misc24(Ctx& c, const Instr& in, uint32_t m) {
  uint8_t mode = in.sub;
  switch (in.op) {
    case Op::mul24:
      return lanes<2>(c, in, m, [mode](uint64_t a, uint64_t b, uint64_t, uint64_t, const Width& w) {
        return mul24(a, b, mode, w);
      });
    case Op::mad24:
      return lanes<3>(c, in, m, [mode](uint64_t a, uint64_t b, uint64_t x, uint64_t, const Width& w) {
        return mul24(a, b, mode, w) + x;
      });
    case Op::sad:
      return lanes<3>(c, in, m, [](uint64_t a, uint64_t b, uint64_t x, uint64_t, const Width& w) {
        bool lt = w.sign ? static_cast<int64_t>(a) < static_cast<int64_t>(b) : a < b;
        return (lt ? b - a : a - b) + x;
      });
    default: return false;
  }
}

}  // namespace

ExecFn int_executor(Op op) {
  if (is_bit_op(op)) return bits_op;
  switch (op) {
    case Op::add:
    case Op::sub: return add;
    case Op::mul: return mul;
    case Op::mad: return mad;
    case Op::div:
    case Op::rem: return div;
    case Op::min:
    case Op::max: return minmax;
    case Op::abs:
    case Op::neg: return unary;
    case Op::mul24:
    case Op::mad24:
    case Op::sad: return misc24;
    default: return nullptr;
  }
}

}  // namespace vgpu::ptx::exec
