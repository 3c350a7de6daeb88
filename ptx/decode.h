// SPDX-License-Identifier: GPL-2.0-or-later
// One instruction's decoding (internal to ptx/): its modifiers split into
// types, rounding, flags and op-specific words; its operands read and
// converted to the instruction's types. decode.cc holds the opcode table,
// decode_ops.cc the decoders of each family.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptx/parser.h"

namespace vgpu::ptx {

struct Decoder {
  Parser& p;
  Instr in;
  std::string_view opcode;
  std::vector<Type> types;
  std::vector<std::string_view> words;  // op-specific modifiers, in order
  std::vector<RawOperand> ops;
  uint32_t line;

  std::unexpected<ParseError> unsupported() const;
  std::unexpected<ParseError> bad(const std::string& why) const;
  Status split_modifiers(std::string_view mods);
  Status read_operands();
  bool take(std::string_view w);  // removes the word if present
  // Takes the first word of `table` that is present and stores its value in
  // `out`; false when none is.
  template <typename E, size_t N>
  bool take_one(const std::pair<std::string_view, E> (&table)[N], uint8_t& out) {
    for (auto& [n, v] : table) {
      if (take(n)) {
        out = static_cast<uint8_t>(v);
        return true;
      }
    }
    return false;
  }
  Status no_words_left() const;
  Status one_type();
  Status count(size_t n) const;
  // Operand i as a value of type t (a register, immediate or special register).
  Status value(Operand& out, size_t i, Type t);
  Status dest(Operand& out, size_t i);
  // The common operand list: exactly 1 + srcs.size() + `more` operands;
  // operand 0 the destination (dst[0]), then a value of each type of `srcs`
  // (src[0], src[1], ...). The `more` after them are the caller's to read.
  Status dest_and_values(std::initializer_list<Type> srcs, size_t more = 0);
  // The membermask of a warp instruction: operand i of the .sync form, all
  // lanes for the form without .sync.
  Status membermask(Operand& out, size_t i, bool sync);
  Status address(Operand& out, size_t i, uint8_t slot);
  Status push();

  // Families (decode_ops.cc).
  Status arith(uint8_t nsrc);
  Status cvt();
  Status cvta();
  Status mov();
  Status selp();
  Status setp();
  Status bra();
  Status call();
  Status control();
  Status memory();
  Status atomic();
  Status barrier();
  Status nop();
  Status shfl();
  Status vote();
  Status activemask();
};

}  // namespace vgpu::ptx
