// SPDX-License-Identifier: GPL-2.0-or-later
// build_fast: which instructions have a fast form (exec_fast.h), decided
// once per launch. Each rule below is the executor's own arithmetic for
// that form written as one expression over all lanes (see the executor
// named beside it); anything else stays FastKind::none.
#include <cstring>
#include <unordered_map>

#include "gpu/ptx/exec_fast.h"

namespace vgpu::ptx::exec {
namespace {

using K = FastKind;

class Builder {
 public:
  Builder(FastProgram& out, const LaunchConfig& launch) : out_(out), launch_(launch) {}
  FastOp decode(const Instr& in);

 private:
  // An operand as a FastOp source: a register, or a splat of a constant.
  bool source(const Operand& o, uint32_t& slot) {
    if (o.kind == Operand::Kind::reg) {
      slot = o.reg;
      return o.reg < kSplatBit;
    }
    uint64_t v = 0;
    if (!constant(o, v)) return false;
    slot = splat(v);
    return true;
  }
  uint32_t splat(uint64_t v) {  // one splat per distinct value
    auto [it, added] = splat_index_.try_emplace(v, static_cast<uint32_t>(out_.splats.size() / kWarpSize));
    if (added) out_.splats.insert(out_.splats.end(), kWarpSize, v);
    return kSplatBit | it->second;
  }
  // The value of an immediate or of an address that is the same in every lane (Ctx::src_slow).
  bool constant(const Operand& o, uint64_t& v) const {
    if (o.kind == Operand::Kind::imm) {
      v = o.imm;
      return true;
    }
    if (o.kind != Operand::Kind::addr || o.reg != kNoReg) return false;
    switch (o.base) {
      case AddrBase::data: v = launch_.data_va + o.imm; return true;
      case AddrBase::fparam: v = kFrameParamBase + o.imm; return true;
      case AddrBase::local: return false;
      default: v = o.imm; return true;
    }
  }
  static bool dst(const Instr& in) {
    return in.dst[0].kind == Operand::Kind::reg && in.dst[1].kind == Operand::Kind::none;
  }
  FastOp binary(const Instr& in, K k, uint64_t mask);
  FastOp integer(const Instr& in);
  FastOp floating(const Instr& in);
  FastOp data(const Instr& in);
  FastOp move(const Instr& in, uint64_t mask);
  FastOp convert(const Instr& in, uint64_t mask);
  FastOp set_predicate(const Instr& in);
  FastOp memory(const Instr& in);
  FastOp special(SReg s, FastOp f) const;

  FastProgram& out_;
  const LaunchConfig& launch_;
  std::unordered_map<uint64_t, uint32_t> splat_index_;
};

// exec_data.cc's compare_int and compare_float as exec_fast.cc's comparison
// codes: 0..5 ==, !=, <, <=, >, >= (bit 3: unordered), 6 num, 7 nan, 15 never.
uint8_t compare_code(Cmp cmp, bool fp) {
  switch (cmp) {
    case Cmp::eq: return 0;
    case Cmp::ne: return 1;
    case Cmp::lt:
    case Cmp::lo: return 2;
    case Cmp::le:
    case Cmp::ls: return 3;
    case Cmp::gt:
    case Cmp::hi: return 4;
    case Cmp::ge:
    case Cmp::hs: return 5;
    case Cmp::ltu: return fp ? 2 | 8 : 2;
    case Cmp::leu: return fp ? 3 | 8 : 3;
    case Cmp::gtu: return fp ? 4 | 8 : 4;
    case Cmp::geu: return fp ? 5 | 8 : 5;
    case Cmp::equ: return fp ? 0 | 8 : 15;
    case Cmp::neu: return fp ? 1 | 8 : 15;
    case Cmp::num: return fp ? 6 : 15;
    case Cmp::nan: return fp ? 7 : 15;
  }
  return 15;
}

constexpr bool is_int32(Type t) { return type_bytes(t) == 4 && !is_float(t); }
constexpr bool is_int64(Type t) { return type_bytes(t) == 8 && !is_float(t); }

FastOp Builder::binary(const Instr& in, K k, uint64_t mask) {
  FastOp f;
  if (!dst(in) || !source(in.src[0], f.a) || !source(in.src[1], f.b)) return f;
  f.kind = k;
  f.d = in.dst[0].reg;
  f.mask = mask;
  return f;
}

// exec_int.cc: add/sub/mul.lo/and/or/xor at 32 or 64 bits keep the low bits
// of the operation on normalised operands, which are the low bits of the
// operation on the raw lanes; mul.wide and mad.lo; shifts by an immediate.
FastOp Builder::integer(const Instr& in) {
  FastOp none;
  if (in.flags & (kCarryIn | kCarryOut)) return none;
  const bool i32 = is_int32(in.type), i64 = is_int64(in.type);
  if (!i32 && !i64) return none;
  const uint64_t mask = width_mask(type_bytes(in.type));
  const auto mode = static_cast<MulMode>(in.sub);
  switch (in.op) {
    case Op::add: return binary(in, K::add, mask);
    case Op::sub: return binary(in, K::sub, mask);
    case Op::and_: return binary(in, K::and_, mask);
    case Op::or_: return binary(in, K::or_, mask);
    case Op::xor_: return binary(in, K::xor_, mask);
    case Op::mul:
      if (mode == MulMode::lo) return binary(in, i32 ? K::mul32 : K::mul, mask);
      if (mode == MulMode::wide && i32)
        return binary(in, is_signed(in.type) ? K::mul_wide_s32 : K::mul_wide_u32, ~0ull);
      return none;
    case Op::mad: {
      if (mode != MulMode::lo) return none;
      FastOp f = binary(in, i32 ? K::mad32 : K::mad, mask);
      if (f.kind == K::none || !source(in.src[2], f.x)) return none;
      return f;
    }
    case Op::shl:
    case Op::shr: {
      const uint32_t bits = type_bytes(in.type) * 8;
      if (in.src[1].kind != Operand::Kind::imm || (in.src[1].imm & 0xffffffffu) >= bits) return none;
      K k = in.op == Op::shl ? K::shl : !is_signed(in.type) ? K::shr_u : i32 ? K::shr_s32 : K::shr_s64;
      FastOp f = binary(in, k, mask);
      f.imm = in.src[1].imm & 0xffffffffu;
      return f;
    }
    default: return none;
  }
}

// exec_float.cc: .rn (or no rounding) without .ftz/.sat is one IEEE operation per lane.
FastOp Builder::floating(const Instr& in) {
  FastOp none;
  if ((in.rnd != Round::none && in.rnd != Round::rn) || (in.flags & (kFtz | kSat))) return none;
  const bool f32 = in.type == Type::f32;
  switch (in.op) {
    case Op::add: return binary(in, f32 ? K::add_f32 : K::add_f64, ~0ull);
    case Op::sub: return f32 ? binary(in, K::sub_f32, ~0ull) : none;
    case Op::mul: return binary(in, f32 ? K::mul_f32 : K::mul_f64, ~0ull);
    case Op::fma:
    case Op::mad: {  // fused, as the executor computes it
      FastOp f = binary(in, f32 ? K::fma_f32 : K::fma_f64, ~0ull);
      if (f.kind == K::none || !source(in.src[2], f.x)) return none;
      return f;
    }
    default: return none;
  }
}

// exec_data.cc: mov, cvta, selp, plain setp; cvt between integers without .sat.
FastOp Builder::data(const Instr& in) {
  FastOp none;
  const uint64_t mask = width_mask(type_bytes(in.type));
  switch (in.op) {
    case Op::mov: return move(in, mask);
    case Op::cvta: {
      const uint64_t window = window_of(in.space);
      if (!dst(in) || in.src[0].kind != Operand::Kind::reg) return none;
      FastOp f;
      f.kind = K::add;
      f.d = in.dst[0].reg;
      f.a = in.src[0].reg;
      f.b = splat((in.flags & kToSpace) ? 0 - window : window);
      f.mask = mask;
      return f;
    }
    case Op::cvt: return convert(in, mask);
    case Op::selp: {
      if (in.src[2].kind != Operand::Kind::reg) return none;
      FastOp f = binary(in, K::selp, ~0ull);
      if (f.kind == K::none) return none;
      f.x = in.src[2].reg;
      f.imm = in.src[2].neg ? 1 : 0;
      return f;
    }
    case Op::setp: return set_predicate(in);
    default: return none;
  }
}

// mov of a constant, a register or a special register.
FastOp Builder::move(const Instr& in, uint64_t mask) {
  FastOp none;
  if (in.type == Type::pred || !dst(in)) return none;
  const Operand& s = in.src[0];
  FastOp f;
  f.d = in.dst[0].reg;
  f.mask = mask;
  if (s.kind == Operand::Kind::sreg) return special(static_cast<SReg>(s.reg), f);
  uint64_t v = 0;
  if (constant(s, v)) {
    f.kind = K::fill;
    f.imm = v & mask;
    return f;
  }
  if (s.kind != Operand::Kind::reg) return none;
  f.kind = K::and_;
  f.a = s.reg;
  f.b = splat(~0ull);
  return f;
}

// cvt between integers: a sign extension from 4 bytes, or the source's width masked.
FastOp Builder::convert(const Instr& in, uint64_t mask) {
  FastOp none;
  if (is_float(in.type) || is_float(in.type2) || (in.flags & kSat) || !dst(in)) return none;
  if (in.src[0].kind != Operand::Kind::reg || type_bytes(in.type) == 0 || type_bytes(in.type2) == 0) return none;
  FastOp f;
  f.d = in.dst[0].reg;
  f.a = in.src[0].reg;
  const uint32_t sb = type_bytes(in.type2);
  if (is_signed(in.type2) && sb == 4) {
    f.kind = K::sext32;
    f.mask = mask;
  } else if (!is_signed(in.type2) || sb == 8) {
    f.kind = K::and_;  // sext at 8 bytes is the value itself
    f.b = splat(~0ull);
    f.mask = width_mask(sb) & mask;
  }
  return f;
}

// setp without a boolean combine, at f32 or a 32/64-bit integer type.
FastOp Builder::set_predicate(const Instr& in) {
  FastOp none;
  if (in.bool_op != static_cast<uint8_t>(BoolOp::none) || in.dst[0].kind != Operand::Kind::reg) return none;
  K k = K::none;
  if (in.type2 == Type::f32)
    k = K::setp_f32;
  else if (is_int32(in.type2))
    k = is_signed(in.type2) ? K::setp_s32 : K::setp_u32;
  else if (is_int64(in.type2))
    k = is_signed(in.type2) ? K::setp_s64 : K::setp_u64;
  FastOp f;
  if (k == K::none || !source(in.src[0], f.a) || !source(in.src[1], f.b)) return none;
  if (in.dst[1].kind == Operand::Kind::reg)
    f.e = in.dst[1].reg;
  else if (in.dst[1].kind != Operand::Kind::none)
    return none;
  f.kind = k;
  f.sub = compare_code(static_cast<Cmp>(in.sub), k == K::setp_f32);
  f.d = in.dst[0].reg;
  return f;
}

// mov of a special register (Ctx::sreg): the launch's constants become
// fills, %tid and %ctaid their own kernels; the clocks count the warp
// instructions before this one, which a straight run (exec_fast.h)
// accounts only after it, so they stay with the executor.
FastOp Builder::special(SReg s, FastOp f) const {
  const Dim3& g = launch_.grid;
  const Dim3& b = launch_.block;
  const auto fill = [&](uint64_t v) {
    f.kind = K::fill;
    f.imm = v & f.mask;
    return f;
  };
  // `kind` over dimension s - x (x, y or z).
  const auto dimension = [&](K kind, SReg x) {
    f.kind = kind;
    f.sub = static_cast<uint8_t>(static_cast<uint32_t>(s) - static_cast<uint32_t>(x));
    return f;
  };
  switch (s) {
    case SReg::ntid_x: return fill(b.x);
    case SReg::ntid_y: return fill(b.y);
    case SReg::ntid_z: return fill(b.z);
    case SReg::nctaid_x: return fill(g.x);
    case SReg::nctaid_y: return fill(g.y);
    case SReg::nctaid_z: return fill(g.z);
    case SReg::tid_x:
    case SReg::tid_y:
    case SReg::tid_z: return dimension(K::tid, SReg::tid_x);
    case SReg::ctaid_x:
    case SReg::ctaid_y:
    case SReg::ctaid_z: return dimension(K::ctaid, SReg::ctaid_x);
    case SReg::clock:
    case SReg::clock64:
    case SReg::globaltimer: return FastOp{};
    default:
      f.kind = K::sreg;
      f.sub = static_cast<uint8_t>(s);
      return f;
  }
}

// An element read as exec_mem.cc's read_elem does.
uint64_t read_elem(const std::byte* p, Type t) {
  uint64_t v = 0;
  uint32_t n = type_bytes(t);
  std::memcpy(&v, p, n);
  return is_signed(t) ? static_cast<uint64_t>(sext(v, n)) : v;
}

// exec_mem.cc: an entry parameter is the same for the whole launch (a
// constant); a scalar 4- or 8-byte global or shared access through a
// register (the warp path, run over all 32 lanes).
FastOp Builder::memory(const Instr& in) {
  FastOp none;
  const Operand& a = in.src[0];
  const uint32_t bytes = type_bytes(in.type);
  if (in.vec != 1 || a.kind != Operand::Kind::addr) return none;
  if (in.op == Op::ld && in.space == StateSpace::param && a.reg == kNoReg && a.base == AddrBase::kparam && dst(in)) {
    const auto& params = launch_.params;
    if (bytes == 0 || (a.imm & (bytes - 1)) || a.imm > params.size() || params.size() - a.imm < bytes) return none;
    FastOp f;
    f.kind = K::fill;
    f.d = in.dst[0].reg;
    f.imm = read_elem(params.data() + a.imm, in.type);
    return f;
  }
  if ((bytes != 4 && bytes != 8) || a.reg == kNoReg || in.type == Type::pred) return none;
  const bool shared = in.space == StateSpace::shared;
  const bool global = in.space == StateSpace::global || in.space == StateSpace::constant ||
                      in.space == StateSpace::generic;
  if (!shared && !global) return none;
  if (a.base != AddrBase::none && a.base != AddrBase::data && a.base != AddrBase::shared) return none;
  FastOp f;
  f.space = in.space;
  f.a = a.reg;
  f.imm = a.base == AddrBase::data ? launch_.data_va + a.imm : a.imm;
  f.sub = static_cast<uint8_t>(bytes);
  f.mask = is_signed(in.type) && bytes == 4 ? 1 : 0;
  if (in.op == Op::ld) {
    if (!dst(in)) return none;
    f.d = in.dst[0].reg;
    f.kind = shared ? K::ld_shared : K::ld_global;
    return f;
  }
  if (in.op != Op::st || in.dst[0].kind != Operand::Kind::reg) return none;
  f.b = in.dst[0].reg;  // the value (st's "destination" operand)
  f.kind = shared ? K::st_shared : K::st_global;
  return f;
}

FastOp Builder::decode(const Instr& in) {
  if (in.op == Op::ld || in.op == Op::st) return memory(in);
  if (in.op == Op::bra) {  // the dispatch loop's uniform branch (interpreter.cc)
    FastOp f;
    f.kind = K::bra;
    f.imm = in.target;
    f.x = in.guard;
    f.sub = (in.flags & kNegGuard) ? 1 : 0;
    return f;
  }
  if (in.op == Op::exit || in.op == Op::ret) {  // a whole warp's exit, inside a chain (interpreter.cc's exec_ret)
    FastOp f;
    f.kind = K::exit_;
    f.sub = in.op == Op::exit ? 1 : 0;
    return f;
  }
  if (is_float(in.type) && in.op != Op::mov && in.op != Op::selp && in.op != Op::setp) return floating(in);
  switch (in.op) {
    case Op::mov:
    case Op::cvta:
    case Op::cvt:
    case Op::selp:
    case Op::setp: return data(in);
    default: return integer(in);
  }
}

// The operands as lane offsets in the frame's registers, a splat s after
// the program's registers (exec_fast.h, kLaneScale): false when one is too
// large to scale (the op stays with the executor).
bool scale_operands(FastOp& f, uint32_t max_regs) {
  bool ok = true;
  const auto scale = [&](uint32_t& r) {
    if (r == kNoReg) return;
    const uint64_t index = r & kSplatBit ? uint64_t{max_regs} + (r & ~kSplatBit) : r;
    if (index >= kSplatBit / kLaneScale) {
      ok = false;
      return;
    }
    r = static_cast<uint32_t>(index * kLaneScale);
  };
  for (uint32_t* r : {&f.d, &f.e, &f.a, &f.b, &f.x}) scale(*r);
  return ok;
}

// Whether instruction i can run in a launch of entry function `entry`:
// it is in that entry or in a function the entry calls, transitively
// (registers are numbered per function, and other functions never run).
std::vector<uint8_t> launched_code(const Program& prog, uint32_t entry) {
  std::vector<uint8_t> in(prog.code.size(), 0), seen(prog.functions.size(), 0);
  std::vector<uint32_t> todo{entry};
  seen[entry] = 1;
  while (!todo.empty()) {
    const Function& fn = prog.functions[todo.back()];
    todo.pop_back();
    for (uint32_t i = fn.first; i < fn.end && i < in.size(); ++i) {
      in[i] = 1;
      const Instr& c = prog.code[i];
      if (c.op != Op::call || c.target >= prog.calls.size()) continue;
      const uint32_t callee = prog.calls[c.target].callee;
      if (callee < seen.size() && !seen[callee]) {
        seen[callee] = 1;
        todo.push_back(callee);
      }
    }
  }
  return in;
}

// How many of those instructions name register r as a destination (a
// store's value counts too: it only makes the count larger).
std::vector<uint32_t> writers(const Program& prog, const std::vector<uint8_t>& launched) {
  std::vector<uint32_t> n(prog.max_regs, 0);
  const auto count = [&](uint32_t r) {
    if (r < n.size()) ++n[r];
  };
  for (size_t i = 0; i < prog.code.size(); ++i) {
    if (!launched[i]) continue;
    for (const Operand& o : prog.code[i].dst) {
      if (o.kind == Operand::Kind::reg) count(o.reg);
      if (o.kind == Operand::Kind::vec)
        for (uint32_t k = 0; k < o.count && k < 4; ++k) count(o.regs[k]);
    }
  }
  return n;
}

// FastProgram::consts (before the operands are scaled): a register with one
// writer whose FastOp is a fill, or an and/or/xor/add/sub of constant
// sources, holds that one value; one whose only writer reads %tid holds
// the warp's %tid (not a constant for other ops); the writer becomes a nop.
void fold_constant_registers(const Program& prog, uint32_t entry, FastProgram& out) {
  const std::vector<uint8_t> launched = launched_code(prog, entry);
  const std::vector<uint32_t> n = writers(prog, launched);
  std::vector<uint8_t> known(prog.max_regs, 0);
  std::vector<uint64_t> value(prog.max_regs, 0);
  const auto constant = [&](uint32_t r, uint64_t& v) {
    if (r == kNoReg) return false;
    if (r & kSplatBit) {
      v = out.splats[size_t{r & ~kSplatBit} * kWarpSize];
      return true;
    }
    v = value[r];
    return r < known.size() && known[r];
  };
  // Passes until no register is added (a use may come before its writer in the code), at most kFoldPasses: a
  // hostile chain of writers in reverse order would take a pass each, and what is left unfolded is only slower.
  constexpr int kFoldPasses = 4;
  bool changed = true;
  for (int pass = 0; changed && pass < kFoldPasses; ++pass) {
    changed = false;
    for (size_t i = 0; i < out.ops.size(); ++i) {
      FastOp& f = out.ops[i];
      if (!launched[i] || f.kind == K::none || f.kind == K::nop || f.d >= known.size() || known[f.d] || n[f.d] != 1 ||
          f.e != kNoReg)
        continue;
      uint64_t a = 0, b = 0, v = 0;
      if (f.kind == K::tid) {
        out.consts.push_back({.reg = f.d, .value = f.mask, .tid_dim = f.sub});
        f = FastOp{.kind = K::nop, .d = f.d};
        continue;
      }
      if (f.kind == K::ctaid) {
        out.consts.push_back({.reg = f.d, .value = f.mask, .ctaid_dim = f.sub});
        out.block_consts.push_back(out.consts.back());
        f = FastOp{.kind = K::nop, .d = f.d};
        continue;
      }
      if (f.kind == K::fill) {
        v = f.imm;
      } else {
        if (!constant(f.a, a) || !constant(f.b, b)) continue;
        switch (f.kind) {  // exec_fast.cc's int_op
          case K::and_: v = a & b & f.mask; break;
          case K::or_: v = (a | b) & f.mask; break;
          case K::xor_: v = (a ^ b) & f.mask; break;
          case K::add: v = (a + b) & f.mask; break;
          case K::sub: v = (a - b) & f.mask; break;
          default: continue;
        }
      }
      known[f.d] = 1;
      value[f.d] = v;
      out.consts.push_back({.reg = f.d, .value = v});
      f = FastOp{.kind = K::nop, .d = f.d};
      changed = true;
    }
  }
}

}  // namespace

FastProgram build_fast(const Program& prog, const LaunchConfig& launch) {
  FastProgram out;
  out.ops.reserve(prog.code.size());
  Builder b(out, launch);
  for (const Instr& in : prog.code) out.ops.push_back(b.decode(in));
  fold_constant_registers(prog, prog.entry_functions[launch.entry], out);
  for (size_t i = 0; i < out.ops.size(); ++i) {
    FastOp& f = out.ops[i];
    if (!scale_operands(f, prog.max_regs)) f = FastOp{};
    f.chain = (f.kind == K::bra || prog.code[i].guard == kNoReg) ? f.kind : K::none;
  }
  for (size_t i = out.ops.size(); i-- > 0;) {  // a chain steps over nops in a row at once
    FastOp& f = out.ops[i];
    if (f.chain == K::nop)
      f.imm = i + 1 < out.ops.size() && out.ops[i + 1].chain == K::nop ? out.ops[i + 1].imm + 1 : 1;
  }
  return out;
}

}  // namespace vgpu::ptx::exec
