// SPDX-License-Identifier: GPL-2.0-or-later
// The decoders of each instruction family: which modifiers they take, how
// many operands and of which types.
#include "ptx/decode.h"
#include "ptx/op_groups.h"

namespace vgpu::ptx {
namespace {

constexpr std::pair<std::string_view, MulMode> kMulModes[] = {{"lo", MulMode::lo},
                                                              {"hi", MulMode::hi},
                                                              {"wide", MulMode::wide}};
constexpr std::pair<std::string_view, Cmp> kCmps[] = {{"eq", Cmp::eq},   {"ne", Cmp::ne},   {"lt", Cmp::lt},
                                                      {"le", Cmp::le},   {"gt", Cmp::gt},   {"ge", Cmp::ge},
                                                      {"lo", Cmp::lo},   {"ls", Cmp::ls},   {"hi", Cmp::hi},
                                                      {"hs", Cmp::hs},   {"equ", Cmp::equ}, {"neu", Cmp::neu},
                                                      {"ltu", Cmp::ltu}, {"leu", Cmp::leu}, {"gtu", Cmp::gtu},
                                                      {"geu", Cmp::geu}, {"num", Cmp::num}, {"nan", Cmp::nan}};
constexpr std::pair<std::string_view, BoolOp> kBoolOps[] = {{"and", BoolOp::and_},
                                                            {"or", BoolOp::or_},
                                                            {"xor", BoolOp::xor_}};
constexpr std::pair<std::string_view, uint8_t> kTestp[] = {{"finite", 0},     {"infinite", 1}, {"number", 2},
                                                           {"notanumber", 3}, {"normal", 4},   {"subnormal", 5}};

}  // namespace

Status Decoder::arith(uint8_t nsrc) {
  Op op = in.op;
  if (op == Op::mul || op == Op::mad || op == Op::mul24 || op == Op::mad24) take_one(kMulModes, in.sub);
  if (op == Op::testp && !take_one(kTestp, in.sub)) return bad("no class");
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  if (in.type == Type::pred && op != Op::and_ && op != Op::or_ && op != Op::xor_ && op != Op::not_)
    return unsupported();
  if ((is_float_only(op) && !is_float(in.type)) || (is_int_only(op) && is_float(in.type))) return unsupported();
  if (is_float(in.type) && (in.flags & (kCarryIn | kCarryOut))) return unsupported();
  if ((op == Op::mul || op == Op::mad) && !is_float(in.type) && in.sub == static_cast<uint8_t>(MulMode::wide) &&
      type_bytes(in.type) == 8)
    return unsupported();
  PTX_TRY(count(1u + nsrc));
  PTX_TRY(dest(in.dst[0], 0));
  for (uint8_t i = 0; i < nsrc; ++i) {
    Type t = in.type;
    if ((op == Op::shl || op == Op::shr) && i == 1) t = Type::u32;
    if (op == Op::bfe && i > 0) t = Type::u32;
    if (op == Op::bfi && i > 1) t = Type::u32;
    if ((op == Op::mad || op == Op::mad24) && i == 2 && in.sub == static_cast<uint8_t>(MulMode::wide))
      t = type_bytes(t) == 4 ? Type::b64 : Type::b32;
    PTX_TRY(value(in.src[i], 1u + i, t));
  }
  return push();
}

Status Decoder::cvt() {
  PTX_TRY(no_words_left());
  if (types.size() != 2) return bad("cvt needs two types");
  in.type = types[0];
  in.type2 = types[1];
  if (in.type == Type::pred || in.type2 == Type::pred) return unsupported();
  PTX_TRY(dest_and_values({in.type2}));
  return push();
}

Status Decoder::cvta() {
  bool to = take("to");
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  if (to) in.flags |= kToSpace;
  if (in.space == StateSpace::generic) return bad("no state space");
  PTX_TRY(count(2));
  PTX_TRY(dest(in.dst[0], 0));
  if (!ops[1].ident.empty()) {
    const Symbol* s = p.lookup_symbol(ops[1].ident);
    if (!s) return bad("unknown symbol '" + std::string(ops[1].ident) + "'");
    in.src[0].kind = Operand::Kind::addr;
    in.src[0].base = s->base;
    in.src[0].imm = s->offset;
    if (s->extern_shared) p.extern_shared_fixups_.push_back({static_cast<uint32_t>(p.prog_->code.size()), 2});
    return push();
  }
  PTX_TRY(value(in.src[0], 1, in.type));
  return push();
}

Status Decoder::mov() {
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  PTX_TRY(count(2));
  if (ops[0].op.kind == Operand::Kind::vec) {
    in.dst[0] = ops[0].op;
  } else {
    PTX_TRY(dest(in.dst[0], 0));
  }
  const RawOperand& s = ops[1];
  if (s.op.kind == Operand::Kind::vec) {
    in.src[0] = s.op;
  } else if (!s.ident.empty()) {
    const Symbol* sym = p.lookup_symbol(s.ident);
    if (!sym) {
      if (p.func_index_.contains(std::string(s.ident)))
        return p.error_at(ParseStatus::unsupported, line,
                          "unsupported function address '" + std::string(s.ident) + "'");
      return bad("unknown symbol '" + std::string(s.ident) + "'");
    }
    in.src[0].kind = Operand::Kind::addr;
    in.src[0].base = sym->base;
    in.src[0].imm = sym->offset;
    if (sym->extern_shared) p.extern_shared_fixups_.push_back({static_cast<uint32_t>(p.prog_->code.size()), 2});
  } else {
    PTX_TRY(value(in.src[0], 1, in.type));
  }
  if ((in.dst[0].kind == Operand::Kind::vec) == (in.src[0].kind == Operand::Kind::vec) &&
      in.dst[0].kind == Operand::Kind::vec)
    return bad("vector to vector");
  return push();
}

Status Decoder::selp() {
  PTX_TRY(no_words_left());
  PTX_TRY(one_type());
  PTX_TRY(dest_and_values({in.type, in.type, Type::pred}));
  return push();
}

// setp.cmp[.bool].type d[|e], a, b[, c]   set.cmp[.bool].dtype.stype d, a, b[, c]
Status Decoder::setp() {
  if (!take_one(kCmps, in.sub)) return bad("no comparison");
  take_one(kBoolOps, in.bool_op);
  PTX_TRY(no_words_left());
  if (in.op == Op::setp) {
    PTX_TRY(one_type());
    in.type2 = in.type;
    in.type = Type::pred;
  } else {
    if (types.size() != 2) return bad("set needs two types");
    in.type = types[0];
    in.type2 = types[1];
  }
  if (in.type2 == Type::pred) return unsupported();
  bool with_c = in.bool_op != 0;
  PTX_TRY(count(with_c ? 4 : 3));
  if (ops[0].pair) {
    if (in.op != Op::setp) return bad("two destinations");
    in.dst[1] = ops[0].second;
    ops[0].pair = false;
  }
  PTX_TRY(dest(in.dst[0], 0));
  PTX_TRY(value(in.src[0], 1, in.type2));
  PTX_TRY(value(in.src[1], 2, in.type2));
  if (with_c) PTX_TRY(value(in.src[2], 3, Type::pred));
  return push();
}

Status Decoder::bra() {
  PTX_TRY(no_words_left());
  PTX_TRY(count(1));
  if (ops[0].ident.empty())
    return p.error_at(ParseStatus::unsupported, line,
                      "unsupported instruction '" + std::string(opcode) + "' (indirect branch)");
  p.branch_fixups_.push_back({static_cast<uint32_t>(p.prog_->code.size()), std::string(ops[0].ident), line});
  return push();
}

Status Decoder::control() {
  PTX_TRY(no_words_left());
  PTX_TRY(count(0));
  return push();
}

}  // namespace vgpu::ptx
