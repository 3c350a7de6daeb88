// SPDX-License-Identifier: GPL-2.0-or-later
// The opcode table and the decoding steps every instruction shares.
#include "ptx/decode.h"

#include <cstring>

namespace vgpu::ptx {
namespace {

struct OpcodeRow {
  std::string_view name;
  Op op;
  Status (*decode)(Decoder&);
};

template <uint8_t N>
Status arith(Decoder& d) {
  return d.arith(N);
}
template <Status (Decoder::*F)()>
Status call(Decoder& d) {
  return (d.*F)();
}

// name -> executor and decoder. Names not here are refused as unsupported.
constexpr OpcodeRow kOpcodes[] = {
    {"add", Op::add, arith<2>},
    {"sub", Op::sub, arith<2>},
    {"mul", Op::mul, arith<2>},
    {"mad", Op::mad, arith<3>},
    {"mul24", Op::mul24, arith<2>},
    {"mad24", Op::mad24, arith<3>},
    {"sad", Op::sad, arith<3>},
    {"div", Op::div, arith<2>},
    {"rem", Op::rem, arith<2>},
    {"abs", Op::abs, arith<1>},
    {"neg", Op::neg, arith<1>},
    {"min", Op::min, arith<2>},
    {"max", Op::max, arith<2>},
    {"and", Op::and_, arith<2>},
    {"or", Op::or_, arith<2>},
    {"xor", Op::xor_, arith<2>},
    {"not", Op::not_, arith<1>},
    {"cnot", Op::cnot, arith<1>},
    {"shl", Op::shl, arith<2>},
    {"shr", Op::shr, arith<2>},
    {"popc", Op::popc, arith<1>},
    {"clz", Op::clz, arith<1>},
    {"brev", Op::brev, arith<1>},
    {"bfe", Op::bfe, arith<3>},
    {"bfi", Op::bfi, arith<4>},
    {"prmt", Op::prmt, arith<3>},
    {"fma", Op::fma, arith<3>},
    {"rcp", Op::rcp, arith<1>},
    {"sqrt", Op::sqrt, arith<1>},
    {"rsqrt", Op::rsqrt, arith<1>},
    {"ex2", Op::ex2, arith<1>},
    {"lg2", Op::lg2, arith<1>},
    {"sin", Op::sin, arith<1>},
    {"cos", Op::cos, arith<1>},
    {"testp", Op::testp, arith<1>},
    {"copysign", Op::copysign, arith<2>},
    {"addc", Op::add, arith<2>},
    {"subc", Op::sub, arith<2>},
    {"madc", Op::mad, arith<3>},
    {"cvt", Op::cvt, call<&Decoder::cvt>},
    {"cvta", Op::cvta, call<&Decoder::cvta>},
    {"mov", Op::mov, call<&Decoder::mov>},
    {"selp", Op::selp, call<&Decoder::selp>},
    {"setp", Op::setp, call<&Decoder::setp>},
    {"set", Op::set, call<&Decoder::setp>},
    {"bra", Op::bra, call<&Decoder::bra>},
    {"call", Op::call, call<&Decoder::call>},
    {"ret", Op::ret, call<&Decoder::control>},
    {"exit", Op::exit, call<&Decoder::control>},
    {"trap", Op::trap, call<&Decoder::control>},
    {"brkpt", Op::trap, call<&Decoder::control>},
    {"ld", Op::ld, call<&Decoder::memory>},
    {"ldu", Op::ld, call<&Decoder::memory>},
    {"st", Op::st, call<&Decoder::memory>},
    {"atom", Op::atom, call<&Decoder::atomic>},
    {"red", Op::red, call<&Decoder::atomic>},
    {"bar", Op::bar, call<&Decoder::barrier>},
    {"barrier", Op::bar, call<&Decoder::barrier>},
    {"membar", Op::nop, call<&Decoder::nop>},
    {"fence", Op::nop, call<&Decoder::nop>},
    {"shfl", Op::shfl, call<&Decoder::shfl>},
    {"vote", Op::vote, call<&Decoder::vote>},
    {"activemask", Op::activemask, call<&Decoder::activemask>},
};

// Modifiers that change nothing in a single-threaded, cache-less model.
bool ignorable(std::string_view w) {
  static constexpr std::string_view kWords[] = {"volatile", "relaxed", "acquire", "release", "acq_rel",
                                                "weak",     "mmio",    "cta",     "gpu",     "sys",
                                                "cluster",  "nc",      "aligned", "ca",      "cg",
                                                "cs",       "lu",      "cv",      "wb",      "wt"};
  for (auto k : kWords)
    if (k == w) return true;
  return (w.starts_with("L1::") || w.starts_with("L2::")) && w != "L2::cache_hint";
}

}  // namespace

std::unexpected<ParseError> Decoder::unsupported() const {
  return p.error_at(ParseStatus::unsupported, line, "unsupported instruction '" + std::string(opcode) + "'");
}

std::unexpected<ParseError> Decoder::bad(const std::string& why) const {
  return p.error_at(ParseStatus::parse_error, line, "'" + std::string(opcode) + "': " + why);
}

Status Decoder::split_modifiers(std::string_view mods) {
  while (!mods.empty()) {
    size_t dot = mods.find('.', 1);
    std::string_view w = mods.substr(1, dot == std::string_view::npos ? std::string_view::npos : dot - 1);
    mods = dot == std::string_view::npos ? std::string_view{} : mods.substr(dot);
    if (w.empty()) return bad("empty modifier");
    if (auto t = type_from_name(w); t) {
      types.push_back(*t);
      continue;
    } else if (!t.error().empty()) {
      return p.error_at(ParseStatus::unsupported, line,
                        "unsupported instruction '" + std::string(opcode) + "' (" + t.error() + ")");
    }
    static constexpr std::pair<std::string_view, Round> kRound[] = {{"rn", Round::rn},   {"rz", Round::rz},
                                                                    {"rm", Round::rm},   {"rp", Round::rp},
                                                                    {"rni", Round::rni}, {"rzi", Round::rzi},
                                                                    {"rmi", Round::rmi}, {"rpi", Round::rpi}};
    bool done = false;
    for (auto [n, r] : kRound)
      if (n == w) in.rnd = r, done = true;
    if (done) continue;
    static constexpr std::pair<std::string_view, StateSpace> kSpaces[] = {
        {"global", StateSpace::global}, {"shared", StateSpace::shared}, {"shared::cta", StateSpace::shared},
        {"local", StateSpace::local},   {"param", StateSpace::param},   {"const", StateSpace::constant}};
    for (auto [n, s] : kSpaces)
      if (n == w) in.space = s, done = true;
    if (done) continue;
    static constexpr std::pair<std::string_view, uint16_t> kFlags[] = {{"ftz", kFtz},       {"sat", kSat},
                                                                       {"approx", kApprox}, {"full", kApprox},
                                                                       {"cc", kCarryOut},   {"uni", kUni}};
    for (auto [n, f] : kFlags)
      if (n == w) in.flags |= f, done = true;
    if (done) continue;
    if (w == "v2")
      in.vec = 2;
    else if (w == "v4")
      in.vec = 4;
    else if (!ignorable(w))
      words.push_back(w);
  }
  return {};
}

Status Decoder::read_operands() {
  if (p.accept(";")) return {};
  do {
    auto r = p.parse_operand();
    if (!r) return std::unexpected(r.error());
    ops.push_back(*r);
  } while (p.accept(","));
  return p.expect(";");
}

bool Decoder::take(std::string_view w) {
  for (auto it = words.begin(); it != words.end(); ++it) {
    if (*it == w) {
      words.erase(it);
      return true;
    }
  }
  return false;
}

Status Decoder::no_words_left() const {
  if (!words.empty()) return unsupported();
  return {};
}

Status Decoder::one_type() {
  if (types.size() != 1) return types.empty() ? bad("no type") : unsupported();
  in.type = types[0];
  return {};
}

Status Decoder::count(size_t n) const {
  if (ops.size() != n) return bad("expected " + std::to_string(n) + " operands, found " + std::to_string(ops.size()));
  return {};
}

Status Decoder::value(Operand& out, size_t i, Type t) {
  if (i >= ops.size()) return bad("missing operand");
  const RawOperand& r = ops[i];
  out = r.op;
  if (r.pair) return bad("unexpected '|'");
  switch (r.op.kind) {
    case Operand::Kind::reg:
    case Operand::Kind::sreg: return {};
    case Operand::Kind::imm: break;
    default: return bad("operand " + std::to_string(i + 1) + " is not a value");
  }
  using Lit = RawOperand::Lit;
  if (t == Type::f32) {
    float f = 0;
    if (r.lit == Lit::f32bits) return {};
    if (r.lit == Lit::f64bits) {
      double d;
      std::memcpy(&d, &r.op.imm, 8);
      f = static_cast<float>(d);
    } else if (r.lit == Lit::decimal) {
      f = static_cast<float>(r.decimal);
    } else {
      f = static_cast<float>(static_cast<int64_t>(r.op.imm));
    }
    uint32_t b;
    std::memcpy(&b, &f, 4);
    out.imm = b;
  } else if (t == Type::f64) {
    double d = 0;
    if (r.lit == Lit::f64bits) return {};
    if (r.lit == Lit::f32bits) {
      float f;
      uint32_t b = static_cast<uint32_t>(r.op.imm);
      std::memcpy(&f, &b, 4);
      d = f;
    } else if (r.lit == Lit::decimal) {
      d = r.decimal;
    } else {
      d = static_cast<double>(static_cast<int64_t>(r.op.imm));
    }
    std::memcpy(&out.imm, &d, 8);
  } else {
    if (r.lit == Lit::decimal) return bad("a decimal literal for an integer operand");
    uint32_t bytes = type_bytes(t);
    if (t == Type::pred)
      out.imm = out.imm != 0;
    else if (bytes < 8)
      out.imm &= (uint64_t{1} << (bytes * 8)) - 1;
  }
  return {};
}

Status Decoder::dest(Operand& out, size_t i) {
  if (i >= ops.size()) return bad("missing operand");
  const RawOperand& r = ops[i];
  if (r.op.kind != Operand::Kind::reg && r.op.kind != Operand::Kind::sink) return bad("destination is not a register");
  if (r.op.neg) return bad("negated destination");
  out = r.op;
  return {};
}

Status Decoder::dest_and_values(std::initializer_list<Type> srcs, size_t more) {
  PTX_TRY(count(1 + srcs.size() + more));
  PTX_TRY(dest(in.dst[0], 0));
  size_t i = 0;
  for (Type t : srcs) {
    PTX_TRY(value(in.src[i], 1 + i, t));
    ++i;
  }
  return {};
}

Status Decoder::address(Operand& out, size_t i, uint8_t slot) {
  if (i >= ops.size() || ops[i].op.kind != Operand::Kind::addr) return bad("expected an address");
  out = ops[i].op;
  if (ops[i].extern_shared) p.extern_shared_fixups_.push_back({static_cast<uint32_t>(p.prog_->code.size()), slot});
  return {};
}

Status Decoder::push() {
  p.prog_->code.push_back(in);
  return {};
}

Status Parser::decode_instruction(std::string_view opcode, uint32_t guard, bool neg_guard, uint32_t line) {
  Decoder d{*this, {}, opcode, {}, {}, {}, line};
  size_t dot = opcode.find('.');
  std::string_view base = opcode.substr(0, dot);
  const OpcodeRow* row = nullptr;
  for (auto& r : kOpcodes)
    if (r.name == base) row = &r;
  if (!row) {
    while (peek().kind != Token::Kind::end && !accept(";")) next();
    return d.unsupported();
  }
  d.in.op = row->op;
  d.in.line = line;
  d.in.guard = guard;
  if (neg_guard) d.in.flags |= kNegGuard;
  if (base == "addc" || base == "subc" || base == "madc") d.in.flags |= kCarryIn;
  if (dot != std::string_view::npos) PTX_TRY(d.split_modifiers(opcode.substr(dot)));
  if (base == "call") return d.call();
  PTX_TRY(d.read_operands());
  return row->decode(d);
}

}  // namespace vgpu::ptx
