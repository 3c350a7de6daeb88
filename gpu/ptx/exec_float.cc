// SPDX-License-Identifier: GPL-2.0-or-later
// .f32/.f64 arithmetic and cvt. .rn uses the host's IEEE arithmetic;
// .rz/.rm/.rp switch the host's rounding mode around the instruction
// (this file is built with -frounding-math). .ftz flushes subnormal f32
// inputs and results to zero; .sat clamps to [0, 1] (NaN -> 0). The .approx
// functions use the host's libm at full precision.
#include <cfenv>
#include <cmath>
#include <limits>

#include "gpu/ptx/exec.h"
#include "ptx/op_groups.h"

namespace vgpu::ptx::exec {
namespace {

int host_mode(Round r) {
  switch (r) {
    case Round::rz:
    case Round::rzi: return FE_TOWARDZERO;
    case Round::rm:
    case Round::rmi: return FE_DOWNWARD;
    case Round::rp:
    case Round::rpi: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// Sets the host rounding mode for one instruction when it is not nearest.
class RoundingScope {
 public:
  explicit RoundingScope(Round r) : mode_(host_mode(r)) {
    if (mode_ != FE_TONEAREST) std::fesetround(mode_);
  }
  ~RoundingScope() {
    if (mode_ != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  }
  RoundingScope(const RoundingScope&) = delete;
  RoundingScope& operator=(const RoundingScope&) = delete;

 private:
  int mode_;
};

template <typename T>
T ftz(T v, bool on) {
  return on && std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(T(0), v) : v;
}

template <typename T>
T sat(T v, bool on) {
  if (!on) return v;
  if (std::isnan(v)) return T(0);
  return std::min(std::max(v, T(0)), T(1));
}

template <typename T>
T load(uint64_t v) {
  if constexpr (sizeof(T) == 4)
    return as_f32(v);
  else
    return as_f64(v);
}

template <typename T>
T compute(Op op, T a, T b, T x, bool approx) {
  switch (op) {
    case Op::add: return a + b;
    case Op::sub: return a - b;
    case Op::mul: return a * b;
    case Op::mad:
    case Op::fma: return std::fma(a, b, x);
    case Op::div: return a / b;
    case Op::abs: return std::fabs(a);
    case Op::neg: return -a;
    case Op::min: return std::fmin(a, b);
    case Op::max: return std::fmax(a, b);
    case Op::rcp: return T(1) / a;
    case Op::sqrt: return std::sqrt(a);
    case Op::rsqrt: return T(1) / std::sqrt(a);
    case Op::ex2: return std::exp2(a);
    case Op::lg2: return std::log2(a);
    case Op::sin: return std::sin(a);
    case Op::cos: return std::cos(a);
    case Op::copysign: return std::copysign(b, a);
    default: (void)approx; return a;
  }
}

// Without .ftz and .sat: op as a constant, nothing but the operation in
// the lane loop (the same results as the general loop with both off).
template <typename T, int N, Op O>
void plain_lanes(const uint64_t* const* s, uint64_t* d, uint32_t m) {
  for_lanes(m, [&](uint32_t l) {
    T a = load<T>(s[0][l]);
    T b = N > 1 ? load<T>(s[1][l]) : T(0);
    T x = N > 2 ? load<T>(s[2][l]) : T(0);
    d[l] = bits(compute<T>(O, a, b, x, false));
  });
}

#if defined(__x86_64__) && defined(__GNUC__)
// fma over the lanes with the CPU's FMA instruction: the same exact,
// correctly rounded result (in the current rounding mode) as std::fma,
// which without -mfma is a libm call per lane. Chosen at run time.
template <typename T>
__attribute__((target("fma"))) void fma_lanes_hw(const uint64_t* const* s, uint64_t* d, uint32_t m) {
  const uint64_t *a = s[0], *b = s[1], *x = s[2];
  const auto one = [&](uint32_t l) {
    if constexpr (sizeof(T) == 4)
      d[l] = bits(__builtin_fmaf(as_f32(a[l]), as_f32(b[l]), as_f32(x[l])));
    else
      d[l] = bits(__builtin_fma(as_f64(a[l]), as_f64(b[l]), as_f64(x[l])));
  };
  if (m == kFull) {
    for (uint32_t l = 0; l < kWarpSize; ++l) one(l);
    return;
  }
  while (m) {
    one(static_cast<uint32_t>(std::countr_zero(m)));
    m &= m - 1;
  }
}
bool cpu_has_fma() {
  static const bool has = __builtin_cpu_supports("fma");
  return has;
}
#endif

template <typename T, int N>
bool plain(Op op, const uint64_t* const* s, uint64_t* d, uint32_t m) {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (N == 3)
    if ((op == Op::fma || op == Op::mad) && cpu_has_fma()) {
      fma_lanes_hw<T>(s, d, m);
      return true;
    }
#endif
  switch (op) {
    case Op::add: plain_lanes<T, N, Op::add>(s, d, m); return true;
    case Op::sub: plain_lanes<T, N, Op::sub>(s, d, m); return true;
    case Op::mul: plain_lanes<T, N, Op::mul>(s, d, m); return true;
    case Op::mad:
    case Op::fma: plain_lanes<T, N, Op::fma>(s, d, m); return true;
    default: return false;
  }
}

template <typename T, int N>
bool float_lanes(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t* s[3] = {};
  for (int i = 0; i < N; ++i) s[i] = c.src(in.src[i], i);
  uint64_t* d = c.dst(in.dst[0], 4);
  bool fz = (in.flags & kFtz) != 0, st = (in.flags & kSat) != 0, approx = (in.flags & kApprox) != 0;
  Op op = in.op;
  RoundingScope scope(in.rnd);
  if (!fz && !st && plain<T, N>(op, s, d, m)) return true;
  for_lanes(m, [&](uint32_t l) {
    T a = ftz(load<T>(s[0][l]), fz);
    T b = N > 1 ? ftz(load<T>(s[1][l]), fz) : T(0);
    T x = N > 2 ? ftz(load<T>(s[2][l]), fz) : T(0);
    d[l] = bits(sat(ftz(compute<T>(op, a, b, x, approx), fz), st));
  });
  return true;
}

template <typename T>
bool by_arity(Ctx& c, const Instr& in, uint32_t m) {
  switch (in.op) {
    case Op::mad:
    case Op::fma: return float_lanes<T, 3>(c, in, m);
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::min:
    case Op::max:
    case Op::copysign: return float_lanes<T, 2>(c, in, m);
    default: return float_lanes<T, 1>(c, in, m);
  }
}

template <typename T>
bool testp(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t* a = c.src(in.src[0], 0);
  uint64_t* d = c.dst(in.dst[0], 4);
  uint8_t cls = in.sub;
  for_lanes(m, [&](uint32_t l) {
    T v = load<T>(a[l]);
    int k = std::fpclassify(v);
    bool r = false;
    switch (cls) {
      case 0: r = std::isfinite(v); break;
      case 1: r = std::isinf(v); break;
      case 2: r = !std::isnan(v); break;
      case 3: r = std::isnan(v); break;
      case 4: r = k == FP_NORMAL; break;
      case 5: r = k == FP_SUBNORMAL; break;
      default: break;
    }
    d[l] = r;
  });
  return true;
}

bool float_only(Ctx& c, const Instr& in, uint32_t m) {
  if (in.op == Op::testp) return in.type == Type::f32 ? testp<float>(c, in, m) : testp<double>(c, in, m);
  return float_arith(c, in, m);
}

// Float -> integer: round to integral, saturate to the type (NaN -> 0).
template <typename T>
uint64_t float_to_int(T v, Round r, Type dt) {
  if (std::isnan(v)) return 0;
  switch (r) {
    case Round::rzi:
    case Round::rz: v = std::trunc(v); break;
    case Round::rmi:
    case Round::rm: v = std::floor(v); break;
    case Round::rpi:
    case Round::rp: v = std::ceil(v); break;
    default: v = std::nearbyint(v); break;
  }
  uint32_t bytes = type_bytes(dt);
  if (is_signed(dt)) {
    double lo = -std::ldexp(1.0, static_cast<int>(bytes * 8 - 1)), hi = -lo;
    if (v <= lo) return static_cast<uint64_t>(static_cast<int64_t>(lo)) & width_mask(bytes);
    if (v >= hi) return width_mask(bytes) >> 1;
    return static_cast<uint64_t>(static_cast<int64_t>(v)) & width_mask(bytes);
  }
  if (v <= 0) return 0;
  if (v >= std::ldexp(1.0, static_cast<int>(bytes * 8))) return width_mask(bytes);
  return static_cast<uint64_t>(v);
}

template <typename T>
uint64_t int_to_float(uint64_t v, Type st) {
  uint32_t bytes = type_bytes(st);
  T r = is_signed(st) ? static_cast<T>(sext(v, bytes)) : static_cast<T>(v & width_mask(bytes));
  return bits(r);
}

uint64_t int_to_int(uint64_t v, Type st, Type dt, bool saturate) {
  uint32_t sb = type_bytes(st), db = type_bytes(dt);
  bool ss = is_signed(st), ds = is_signed(dt);
  if (!saturate) return (ss ? static_cast<uint64_t>(sext(v, sb)) : v & width_mask(sb)) & width_mask(db);
  __int128 x = ss ? static_cast<__int128>(sext(v, sb)) : static_cast<__int128>(v & width_mask(sb));
  __int128 lo = ds ? -(static_cast<__int128>(1) << (db * 8 - 1)) : 0;
  __int128 hi = ds ? (static_cast<__int128>(1) << (db * 8 - 1)) - 1 : (static_cast<__int128>(1) << (db * 8)) - 1;
  x = x < lo ? lo : x > hi ? hi : x;
  return static_cast<uint64_t>(x) & width_mask(db);
}

uint64_t convert(uint64_t v, const Instr& in) {
  Type dt = in.type, st = in.type2;
  bool fz = (in.flags & kFtz) != 0, st_sat = (in.flags & kSat) != 0;
  if (!is_float(dt) && !is_float(st)) return int_to_int(v, st, dt, st_sat);
  if (!is_float(dt))
    return st == Type::f32 ? float_to_int(ftz(as_f32(v), fz), in.rnd, dt) : float_to_int(as_f64(v), in.rnd, dt);
  if (!is_float(st)) {
    uint64_t r = dt == Type::f32 ? int_to_float<float>(v, st) : int_to_float<double>(v, st);
    return dt == Type::f32 ? bits(sat(as_f32(r), st_sat)) : bits(sat(as_f64(r), st_sat));
  }
  bool integral = in.rnd == Round::rni || in.rnd == Round::rzi || in.rnd == Round::rmi || in.rnd == Round::rpi;
  auto to_int = [&](auto x) {
    if (!integral) return x;
    switch (in.rnd) {
      case Round::rzi: return std::trunc(x);
      case Round::rmi: return std::floor(x);
      case Round::rpi: return std::ceil(x);
      default: return std::nearbyint(x);
    }
  };
  if (dt == Type::f32) {
    float r = st == Type::f32 ? ftz(as_f32(v), fz) : static_cast<float>(as_f64(v));
    return bits(sat(ftz(to_int(r), fz), st_sat));
  }
  double r = st == Type::f64 ? as_f64(v) : static_cast<double>(ftz(as_f32(v), fz));
  return bits(sat(to_int(r), st_sat));
}

bool cvt(Ctx& c, const Instr& in, uint32_t m) {
  const uint64_t* a = c.src(in.src[0], 0);
  uint64_t* d = c.dst(in.dst[0], 4);
  if (!is_float(in.type) && !is_float(in.type2) && !(in.flags & kSat)) {  // int_to_int, widths hoisted
    uint32_t sb = type_bytes(in.type2);
    uint64_t sm = width_mask(sb), dm = width_mask(type_bytes(in.type));
    if (is_signed(in.type2))
      for_lanes(m, [&](uint32_t l) { d[l] = static_cast<uint64_t>(sext(a[l], sb)) & dm; });
    else
      for_lanes(m, [&](uint32_t l) { d[l] = a[l] & sm & dm; });
    return true;
  }
  bool rounding = in.rnd == Round::rz || in.rnd == Round::rm || in.rnd == Round::rp;
  RoundingScope scope(rounding ? in.rnd : Round::rn);
  for_lanes(m, [&](uint32_t l) { d[l] = convert(a[l], in); });
  return true;
}

}  // namespace

bool float_arith(Ctx& c, const Instr& in, uint32_t m) {
  return in.type == Type::f32 ? by_arity<float>(c, in, m) : by_arity<double>(c, in, m);
}

ExecFn float_executor(Op op) {
  if (is_float_only(op)) return float_only;
  return op == Op::cvt ? cvt : nullptr;
}

}  // namespace vgpu::ptx::exec
