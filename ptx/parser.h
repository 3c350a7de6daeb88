// SPDX-License-Identifier: GPL-2.0-or-later
// The parser's state (internal to ptx/): tokens -> Module + Program.
// parser.cc reads directives, declarations and function bodies;
// decode.cc turns one instruction's words into an Instr (the opcode table).
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptx/lexer.h"
#include "ptx/module.h"
#include "ptx/program.h"

namespace vgpu::ptx {

using Status = std::expected<void, ParseError>;

#define PTX_TRY(expr)                                                                              \
  do {                                                                                             \
    if (auto ptx_try_r = (expr); !ptx_try_r) return std::unexpected(std::move(ptx_try_r.error())); \
  } while (0)

// A name in scope: a variable or parameter, as an address.
struct Symbol {
  AddrBase base = AddrBase::none;
  uint64_t offset = 0;
  uint64_t size = 0;
  bool extern_shared = false;
};

// One operand as written, before the instruction's type gives it meaning.
struct RawOperand {
  Operand op;
  std::string_view ident;  // a label, function or symbol name (op.kind == none)
  enum class Lit : uint8_t { none, integer, f32bits, f64bits, decimal } lit = Lit::none;
  double decimal = 0;
  bool pair = false;  // `%p|%q`: op and second
  Operand second;
  bool extern_shared = false;  // an address relative to dynamic shared memory
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ModuleLimits& limits);
  std::expected<std::shared_ptr<const Module>, ParseError> run();

  // Decoding (decode.cc).
  Status decode_instruction(std::string_view opcode, uint32_t guard, bool neg_guard, uint32_t line);

 private:
  friend struct Decoder;
  // Cursor.
  const Token& peek(size_t k = 0) const;
  const Token& next();
  bool accept(std::string_view text);
  Status expect(std::string_view text);
  std::unexpected<ParseError> error(ParseStatus s, const std::string& message) const;
  std::unexpected<ParseError> error_at(ParseStatus s, uint32_t line, const std::string& message) const;
  void skip_line();

  // Directives (parser.cc).
  Status parse_header();
  Status parse_top_level();
  Status parse_section();
  Status parse_variable(Space space, bool is_extern, bool module_scope, AddrBase scope_base);
  // A variable's [.align N] [.vN] .type: sets type, align (0 when not given) and vec.
  Status parse_variable_type(Type& type, uint32_t& align, uint32_t& vec);
  // One name's [dims]: the element count, or unsized for `[]`.
  Status parse_variable_dims(uint64_t& count, bool& unsized);
  // Gives v (and sym) its offset in its space, checked against the space's limit.
  Status place_variable(Space space, bool is_extern, AddrBase base, bool unsized, Variable& v, Symbol& sym);
  // Where `size` bytes aligned to `align` start after `top`; too_large,
  // naming `what`, when they would end past `limit`.
  std::expected<uint64_t, ParseError> place(uint64_t top, uint32_t align, uint64_t size, uint64_t limit,
                                            const char* what) const;
  // The type an attribute word names (".u32"); unsupported, naming the word
  // as a `what` attribute, when it names none.
  std::expected<Type, ParseError> attribute_type(std::string_view word, const char* what) const;
  Status parse_initializer(Type elem, uint32_t elem_bytes, std::vector<std::byte>& init, uint64_t size);
  Status parse_function(bool is_entry, bool is_extern);
  Status parse_performance_directives(uint32_t& max_threads);
  Status parse_param_list(std::vector<Param>& out, uint32_t& end);
  Status parse_body(uint32_t func);
  Status parse_reg_decl();
  Status parse_body_statement(uint32_t func);
  Status finish_function(uint32_t func);
  Status finish_module();

  // Operands (operand.cc; the lookups in function.cc, parse_int in parser.cc).
  std::expected<RawOperand, ParseError> parse_operand();
  std::expected<RawOperand, ParseError> parse_vector_operand();
  std::expected<RawOperand, ParseError> parse_address_operand();
  std::expected<RawOperand, ParseError> number_operand(const Token& v, bool neg);
  std::expected<RawOperand, ParseError> name_operand(const Token& v);
  // A register operand (and a |second one for setp's pair) of register reg.
  std::expected<RawOperand, ParseError> register_operand(RawOperand r, uint32_t reg);
  std::expected<Operand, ParseError> parse_address();
  std::expected<uint32_t, ParseError> lookup_reg(std::string_view name) const;
  const Symbol* lookup_symbol(std::string_view name) const;
  std::expected<int64_t, ParseError> parse_int(const Token& t) const;

 public:
  // State shared with the decoder.
  std::vector<Token> toks_;
  size_t pos_ = 0;
  ModuleLimits limits_;
  std::shared_ptr<Module> mod_;
  std::shared_ptr<Program> prog_;
  std::unordered_map<std::string, Symbol> globals_;
  std::unordered_map<std::string, uint32_t> func_index_;
  uint64_t shared_end_ = 0;
  uint32_t shared_align_ = 1;
  std::vector<std::pair<uint32_t, uint8_t>> extern_shared_fixups_;  // (instr, operand slot)

  // The function being read.
  struct RegRange {
    uint32_t base, count;
    bool range;
  };
  // Registers by name (ranges as "%r<>"), innermost declaration last.
  std::unordered_map<std::string, std::vector<RegRange>> regs_;
  std::vector<std::vector<std::string>> scope_regs_;
  uint32_t num_regs_ = 0;
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
  std::vector<uint32_t> scope_param_top_;
  uint32_t param_top_ = 0, local_top_ = 0;
  std::unordered_map<std::string, uint32_t> labels_;
  struct Fixup {
    uint32_t instr;
    std::string label;
    uint32_t line;
  };
  std::vector<Fixup> branch_fixups_;
  struct PendingCall {
    uint32_t site;
    std::string callee;
    uint32_t line;
  };
  std::vector<PendingCall> pending_calls_;
  bool in_entry_ = false;
  uint32_t cur_func_ = 0;
  std::string version_seen_;
};

std::expected<Type, std::string> type_from_name(std::string_view mod);  // "u32" -> Type::u32

}  // namespace vgpu::ptx
