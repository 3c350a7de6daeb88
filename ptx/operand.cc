// SPDX-License-Identifier: GPL-2.0-or-later
// Operands as written: registers, special registers, literals, addresses,
// vectors, predicate pairs and names.
#include <charconv>

#include "ptx/parser.h"

namespace vgpu::ptx {
namespace {

constexpr std::pair<std::string_view, SReg> kSRegs[] = {
    {"%tid.x", SReg::tid_x},
    {"%tid.y", SReg::tid_y},
    {"%tid.z", SReg::tid_z},
    {"%ntid.x", SReg::ntid_x},
    {"%ntid.y", SReg::ntid_y},
    {"%ntid.z", SReg::ntid_z},
    {"%ctaid.x", SReg::ctaid_x},
    {"%ctaid.y", SReg::ctaid_y},
    {"%ctaid.z", SReg::ctaid_z},
    {"%nctaid.x", SReg::nctaid_x},
    {"%nctaid.y", SReg::nctaid_y},
    {"%nctaid.z", SReg::nctaid_z},
    {"%laneid", SReg::laneid},
    {"%warpid", SReg::warpid},
    {"%nwarpid", SReg::nwarpid},
    {"%smid", SReg::smid},
    {"%nsmid", SReg::nsmid},
    {"%gridid", SReg::gridid},
    {"%clock", SReg::clock},
    {"%clock64", SReg::clock64},
    {"%globaltimer", SReg::globaltimer},
    {"%lanemask_eq", SReg::lanemask_eq},
    {"%lanemask_lt", SReg::lanemask_lt},
    {"%lanemask_le", SReg::lanemask_le},
    {"%lanemask_gt", SReg::lanemask_gt},
    {"%lanemask_ge", SReg::lanemask_ge},
};

}  // namespace

std::expected<RawOperand, ParseError> Parser::parse_operand() {
  const Token& t = peek();
  if (t.kind == Token::Kind::punct && t.text == "{") {
    next();
    return parse_vector_operand();
  }
  if (t.kind == Token::Kind::punct && t.text == "[") {
    next();
    return parse_address_operand();
  }
  RawOperand r;
  if (t.kind == Token::Kind::punct && t.text == "!") {
    next();
    auto reg = lookup_reg(next().text);
    if (!reg) return std::unexpected(reg.error());
    r.op.kind = Operand::Kind::reg;
    r.op.reg = *reg;
    r.op.neg = true;
    return r;
  }
  bool neg = false;
  if (t.kind == Token::Kind::punct && t.text == "-") {
    next();
    neg = true;
  }
  const Token& v = next();
  if (v.kind == Token::Kind::number) return number_operand(v, neg);
  if (neg || v.kind != Token::Kind::word)
    return error_at(ParseStatus::parse_error, v.line, "bad operand '" + std::string(v.text) + "'");
  return name_operand(v);
}

// `{a, b, _, d}` after the '{'.
std::expected<RawOperand, ParseError> Parser::parse_vector_operand() {
  RawOperand r;
  r.op.kind = Operand::Kind::vec;
  do {
    if (r.op.count >= 4) return error(ParseStatus::parse_error, "vector of more than 4 elements");
    const Token& e = next();
    if (e.text == "_") {
      r.op.regs[r.op.count++] = kNoReg;
      continue;
    }
    auto reg = lookup_reg(e.text);
    if (!reg) return std::unexpected(reg.error());
    r.op.regs[r.op.count++] = *reg;
  } while (accept(","));
  PTX_TRY(expect("}"));
  return r;
}

// `[base+disp]` after the '[': base a number, a register or a symbol.
std::expected<RawOperand, ParseError> Parser::parse_address_operand() {
  RawOperand r;
  r.op.kind = Operand::Kind::addr;
  const Token& b = next();
  int64_t disp = 0;
  if (b.kind == Token::Kind::number) {
    auto v = parse_int(b);
    if (!v) return std::unexpected(v.error());
    disp = *v;
  } else if (b.kind == Token::Kind::word && b.text[0] == '%') {
    auto reg = lookup_reg(b.text);
    if (!reg) return std::unexpected(reg.error());
    r.op.reg = *reg;
  } else if (b.kind == Token::Kind::word) {
    const Symbol* s = lookup_symbol(b.text);
    if (!s) return error_at(ParseStatus::parse_error, b.line, "unknown symbol '" + std::string(b.text) + "'");
    r.op.base = s->base;
    disp = static_cast<int64_t>(s->offset);
    r.extern_shared = s->extern_shared;
  } else {
    return error_at(ParseStatus::parse_error, b.line, "bad address");
  }
  if (peek().text == "+" || peek().text == "-") {
    bool neg = next().text == "-";
    if (accept("-")) neg = !neg;
    auto v = parse_int(next());
    if (!v) return std::unexpected(v.error());
    disp += neg ? -*v : *v;
  }
  PTX_TRY(expect("]"));
  r.op.imm = static_cast<uint64_t>(disp);
  return r;
}

// A literal: 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX bits, a decimal, or an integer.
std::expected<RawOperand, ParseError> Parser::number_operand(const Token& v, bool neg) {
  RawOperand r;
  r.op.kind = Operand::Kind::imm;
  std::string_view s = v.text;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    bool f = s[1] == 'f' || s[1] == 'F';
    size_t digits = s.size() - 2;
    auto res = std::from_chars(s.data() + 2, s.data() + s.size(), r.op.imm, 16);
    if (res.ec != std::errc() || res.ptr != s.data() + s.size() || digits != (f ? 8u : 16u))
      return error_at(ParseStatus::parse_error, v.line, "bad float literal '" + std::string(s) + "'");
    r.lit = f ? RawOperand::Lit::f32bits : RawOperand::Lit::f64bits;
    if (neg) r.op.imm ^= f ? uint64_t{1} << 31 : uint64_t{1} << 63;
    return r;
  }
  if (s.find_first_of(".eE") != std::string_view::npos && !(s.size() > 1 && (s[1] == 'x' || s[1] == 'X'))) {
    char* end = nullptr;
    std::string str(s);
    r.decimal = std::strtod(str.c_str(), &end);
    if (end != str.c_str() + str.size()) return error_at(ParseStatus::parse_error, v.line, "bad number '" + str + "'");
    if (neg) r.decimal = -r.decimal;
    r.lit = RawOperand::Lit::decimal;
    return r;
  }
  auto i = parse_int(v);
  if (!i) return std::unexpected(i.error());
  r.op.imm = static_cast<uint64_t>(neg ? -*i : *i);
  r.lit = RawOperand::Lit::integer;
  return r;
}

// A word: the sink '_', a special register, a register, or a label, symbol or function.
std::expected<RawOperand, ParseError> Parser::name_operand(const Token& v) {
  RawOperand r;
  if (v.text == "_") {
    r.op.kind = Operand::Kind::sink;
    return r;
  }
  if (v.text[0] == '%') {
    for (auto& [n, s] : kSRegs) {
      if (n == v.text) {
        r.op.kind = Operand::Kind::sreg;
        r.op.reg = static_cast<uint32_t>(s);
        return r;
      }
    }
    auto reg = lookup_reg(v.text);
    if (!reg) {
      if (v.text.starts_with("%envreg") || v.text.starts_with("%pm") || v.text.starts_with("%cluster") ||
          v.text.starts_with("%total_smem") || v.text.starts_with("%dynamic_smem") || v.text.starts_with("%reserved"))
        return error_at(ParseStatus::unsupported, v.line, "unsupported special register '" + std::string(v.text) + "'");
      return std::unexpected(reg.error());
    }
    return register_operand(r, *reg);
  }
  // Registers need no '%': inline PTX declares `.reg .pred p;` in a block.
  if (auto reg = lookup_reg(v.text)) return register_operand(r, *reg);
  r.ident = v.text;  // a label, symbol or function
  return r;
}

std::expected<RawOperand, ParseError> Parser::register_operand(RawOperand r, uint32_t reg) {
  r.op.kind = Operand::Kind::reg;
  r.op.reg = reg;
  if (accept("|")) {
    auto second = lookup_reg(next().text);
    if (!second) return std::unexpected(second.error());
    r.pair = true;
    r.second.kind = Operand::Kind::reg;
    r.second.reg = *second;
  }
  return r;
}

}  // namespace vgpu::ptx
