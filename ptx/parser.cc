// SPDX-License-Identifier: GPL-2.0-or-later
// Directives, declarations and function bodies (docs/ptx.md, "Parser").
#include "ptx/parser.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace vgpu::ptx {
namespace {

constexpr uint32_t kMaxAlign = 4096;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Directives that may appear and mean nothing to vgpu, each with the
// rest of its line.
bool ignored_line_directive(std::string_view w) { return w == ".loc" || w == ".file"; }

}  // namespace

Parser::Parser(std::vector<Token> tokens, const ModuleLimits& limits)
    : toks_(std::move(tokens)), limits_(limits), mod_(std::make_shared<Module>()), prog_(std::make_shared<Program>()) {}

const Token& Parser::peek(size_t k) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }

const Token& Parser::next() {
  const Token& t = peek();
  if (pos_ + 1 < toks_.size()) ++pos_;
  return t;
}

bool Parser::accept(std::string_view text) {
  if (peek().kind == Token::Kind::end || peek().text != text) return false;
  next();
  return true;
}

Status Parser::expect(std::string_view text) {
  if (accept(text)) return {};
  if (peek().kind == Token::Kind::end)
    return error(ParseStatus::parse_error, "unexpected end of text, expected '" + std::string(text) + "'");
  return error(ParseStatus::parse_error,
               "expected '" + std::string(text) + "', found '" + std::string(peek().text) + "'");
}

std::unexpected<ParseError> Parser::error(ParseStatus s, const std::string& message) const {
  return error_at(s, peek().line, message);
}

std::unexpected<ParseError> Parser::error_at(ParseStatus s, uint32_t line, const std::string& message) const {
  return std::unexpected(ParseError{s, line, message + " at line " + std::to_string(line)});
}

void Parser::skip_line() {
  uint32_t line = peek().line;
  next();
  while (peek().kind != Token::Kind::end && peek().line == line) next();
}

std::expected<int64_t, ParseError> Parser::parse_int(const Token& t) const {
  if (t.kind != Token::Kind::number)
    return error_at(ParseStatus::parse_error, t.line, "expected a number, found '" + std::string(t.text) + "'");
  std::string_view s = t.text;
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size())
    return error_at(ParseStatus::parse_error, t.line, "bad integer '" + std::string(t.text) + "'");
  return static_cast<int64_t>(v);
}

std::expected<std::shared_ptr<const Module>, ParseError> Parser::run() {
  PTX_TRY(parse_header());
  while (peek().kind != Token::Kind::end) PTX_TRY(parse_top_level());
  PTX_TRY(finish_module());
  mod_->program_ = prog_;
  return std::shared_ptr<const Module>(mod_);
}

Status Parser::parse_header() {
  // Comments may come first; .version must be the first directive.
  if (peek().text != ".version") return error(ParseStatus::bad_version, "no .version directive");
  uint32_t line = next().line;
  const Token& v = next();
  unsigned major = 0, minor = 0;
  auto dot = v.text.find('.');
  if (v.kind != Token::Kind::number || dot == std::string_view::npos)
    return error_at(ParseStatus::bad_version, line, "bad .version '" + std::string(v.text) + "'");
  auto r1 = std::from_chars(v.text.data(), v.text.data() + dot, major);
  auto r2 = std::from_chars(v.text.data() + dot + 1, v.text.data() + v.text.size(), minor);
  if (r1.ec != std::errc() || r2.ec != std::errc() || r2.ptr != v.text.data() + v.text.size())
    return error_at(ParseStatus::bad_version, line, "bad .version '" + std::string(v.text) + "'");
  if (major < 3 || major > 9 || (major == 9 && minor > 0))
    return error_at(ParseStatus::bad_version, line,
                    "PTX version " + std::string(v.text) + " is not supported (3.0 to 9.0)");
  mod_->version_ = std::string(v.text);
  return {};
}

Status Parser::parse_top_level() {
  bool is_extern = false;
  for (;;) {
    std::string_view w = peek().text;
    if (w == ".visible" || w == ".weak" || w == ".common") {
      next();
    } else if (w == ".extern") {
      next();
      is_extern = true;
    } else {
      break;
    }
  }
  const Token& t = peek();
  std::string_view w = t.text;
  if (t.kind == Token::Kind::punct || t.kind == Token::Kind::number || t.kind == Token::Kind::string)
    return error(ParseStatus::parse_error, "unexpected '" + std::string(w) + "'");
  if (w == ".target") {
    next();
    if (peek().kind != Token::Kind::word) return error(ParseStatus::parse_error, "bad .target");
    mod_->target_ = std::string(next().text);
    while (accept(",")) next();
    return {};
  }
  if (w == ".address_size") {
    next();
    auto n = parse_int(next());
    if (!n) return std::unexpected(n.error());
    if (*n != 64) return error(ParseStatus::unsupported, ".address_size " + std::to_string(*n) + " (only 64)");
    return {};
  }
  if (w == ".version") return error(ParseStatus::parse_error, "a second .version");
  if (ignored_line_directive(w)) {
    skip_line();
    return {};
  }
  if (w == ".section") return parse_section();
  if (w == ".pragma") {
    while (peek().kind != Token::Kind::end && !accept(";")) next();
    return {};
  }
  if (w == ".entry" || w == ".func") {
    next();
    return parse_function(w == ".entry", is_extern);
  }
  if (w == ".global" || w == ".const" || w == ".shared") {
    next();
    Space s = w == ".global" ? Space::global : w == ".const" ? Space::constant : Space::shared;
    return parse_variable(s, is_extern, true, s == Space::shared ? AddrBase::shared : AddrBase::data);
  }
  if (!w.empty() && w[0] == '.')
    return error(ParseStatus::unsupported, "unsupported directive '" + std::string(w) + "'");
  return error(ParseStatus::parse_error, "unexpected '" + std::string(w) + "'");
}

Status Parser::parse_section() {
  next();
  if (peek().kind == Token::Kind::word) next();
  PTX_TRY(expect("{"));
  int depth = 1;
  while (depth > 0) {
    const Token& t = next();
    if (t.kind == Token::Kind::end) return error(ParseStatus::parse_error, "unterminated .section");
    if (t.text == "{") ++depth;
    if (t.text == "}") --depth;
  }
  return {};
}

std::expected<Type, std::string> type_from_name(std::string_view m) {
  static constexpr std::pair<std::string_view, Type> kTypes[] = {
      {"b8", Type::b8},   {"b16", Type::b16}, {"b32", Type::b32}, {"b64", Type::b64}, {"u8", Type::u8},
      {"u16", Type::u16}, {"u32", Type::u32}, {"u64", Type::u64}, {"s8", Type::s8},   {"s16", Type::s16},
      {"s32", Type::s32}, {"s64", Type::s64}, {"f32", Type::f32}, {"f64", Type::f64}, {"pred", Type::pred}};
  for (auto& [n, t] : kTypes)
    if (n == m) return t;
  if (m == "f16" || m == "f16x2" || m == "bf16" || m == "bf16x2" || m == "b128" || m == "tf32" || m == "e4m3" ||
      m == "e5m2")
    return std::unexpected("unsupported type '." + std::string(m) + "'");
  return std::unexpected(std::string());
}

// [.align N] [.vN] .type name[dims] [= init] {, name...} ;
Status Parser::parse_variable(Space space, bool is_extern, bool module_scope, AddrBase base) {
  uint32_t align = 0, vec = 1;
  Type type = Type::none;
  PTX_TRY(parse_variable_type(type, align, vec));
  uint32_t elem = type_bytes(type) * vec;
  if (align == 0) align = elem;
  for (;;) {
    const Token& name = next();
    if (name.kind != Token::Kind::word)
      return error_at(ParseStatus::parse_error, name.line, "expected a variable name");
    uint64_t count = 1;
    bool unsized = false;
    PTX_TRY(parse_variable_dims(count, unsized));
    uint64_t size = unsized ? 0 : count * elem;
    Variable v{std::string(name.text), space, 0, size, align, {}, false};
    if (accept("=")) {
      if (space == Space::shared) return error(ParseStatus::parse_error, "initializer on a .shared variable");
      PTX_TRY(parse_initializer(type, type_bytes(type), v.init, size));
    }
    Symbol sym{base, 0, size, false};
    PTX_TRY(place_variable(space, is_extern, base, unsized, v, sym));
    if (module_scope) {
      if (globals_.contains(v.name))
        return error_at(ParseStatus::parse_error, name.line, "'" + v.name + "' defined twice");
      globals_[v.name] = sym;
      mod_->variables_.push_back(std::move(v));
    } else {
      scopes_.back()[v.name] = sym;
    }
    if (!accept(",")) break;
  }
  return expect(";");
}

Status Parser::parse_variable_type(Type& type, uint32_t& align, uint32_t& vec) {
  while (peek().kind == Token::Kind::word && peek().text[0] == '.') {
    std::string_view w = next().text;
    if (w == ".align") {
      auto n = parse_int(next());
      if (!n) return std::unexpected(n.error());
      if (!is_pow2(static_cast<uint64_t>(*n)) || *n > kMaxAlign) return error(ParseStatus::parse_error, "bad .align");
      align = static_cast<uint32_t>(*n);
    } else if (w == ".v2" || w == ".v4") {
      vec = w == ".v2" ? 2 : 4;
    } else if (w == ".ptr") {
    } else {
      auto t = attribute_type(w, "variable");
      if (!t) return std::unexpected(t.error());
      type = *t;
    }
  }
  if (type == Type::none || type == Type::pred) return error(ParseStatus::parse_error, "variable without a type");
  return {};
}

Status Parser::parse_variable_dims(uint64_t& count, bool& unsized) {
  while (accept("[")) {
    if (accept("]")) {
      unsized = true;
      continue;
    }
    auto n = parse_int(next());
    if (!n) return std::unexpected(n.error());
    if (*n < 0 || static_cast<uint64_t>(*n) > (uint64_t{1} << 40))
      return error(ParseStatus::too_large, "array too large");
    count *= static_cast<uint64_t>(*n);
    if (count > (uint64_t{1} << 40)) return error(ParseStatus::too_large, "array too large");
    PTX_TRY(expect("]"));
  }
  return {};
}

std::expected<uint64_t, ParseError> Parser::place(uint64_t top, uint32_t align, uint64_t size, uint64_t limit,
                                                  const char* what) const {
  const uint64_t off = align_up(top, align);
  if (off + size > limit)
    return error(ParseStatus::too_large, std::string(what) + " over " + std::to_string(limit) + " bytes");
  return off;
}

std::expected<Type, ParseError> Parser::attribute_type(std::string_view word, const char* what) const {
  auto t = type_from_name(word.substr(1));
  if (!t)
    return error(ParseStatus::unsupported,
                 t.error().empty() ? "unsupported " + std::string(what) + " attribute '" + std::string(word) + "'"
                                   : t.error());
  return *t;
}

Status Parser::place_variable(Space space, bool is_extern, AddrBase base, bool unsized, Variable& v, Symbol& sym) {
  const uint64_t size = v.size;
  const uint32_t align = v.align;
  if (space == Space::shared) {
    if (unsized) {
      if (!is_extern) return error(ParseStatus::parse_error, "unsized .shared variable without .extern");
      v.external = true;
      sym.extern_shared = true;
      shared_align_ = std::max(shared_align_, align);
    } else {
      auto off = place(shared_end_, align, size, limits_.max_static_shared_bytes, "static shared memory");
      if (!off) return std::unexpected(off.error());
      v.offset = sym.offset = *off;
      shared_end_ = *off + size;
    }
  } else if (base == AddrBase::data) {
    if (unsized) return error(ParseStatus::unsupported, "unsized variable '" + v.name + "'");
    auto off = place(mod_->data_bytes_, align, size, limits_.max_data_bytes, "module data");
    if (!off) return std::unexpected(off.error());
    v.offset = sym.offset = *off;
    mod_->data_bytes_ = *off + size;
  } else if (base == AddrBase::local) {
    if (unsized) return error(ParseStatus::parse_error, "unsized .local variable");
    auto off = place(local_top_, align, size, limits_.max_local_bytes, "local memory");
    if (!off) return std::unexpected(off.error());
    sym.offset = *off;
    local_top_ = static_cast<uint32_t>(*off + size);
  } else {  // a call-site .param
    if (unsized) return error(ParseStatus::parse_error, "unsized .param variable");
    auto off = place(param_top_, align, size, limits_.max_param_bytes, "parameter area");
    if (!off) return std::unexpected(off.error());
    sym.offset = *off;
    param_top_ = static_cast<uint32_t>(*off + size);
    auto& fn = prog_->functions[cur_func_];
    fn.param_frame_bytes = std::max(fn.param_frame_bytes, param_top_);
  }
  return {};
}

Status Parser::parse_initializer(Type elem, uint32_t bytes, std::vector<std::byte>& init, uint64_t size) {
  init.assign(size, std::byte{0});
  uint64_t index = 0;
  int depth = 0;
  auto put = [&](const Token& t, bool neg) -> Status {
    if (t.kind != Token::Kind::number) {
      if (t.text == "generic" || t.kind == Token::Kind::word)
        return error_at(ParseStatus::unsupported, t.line, "unsupported initializer '" + std::string(t.text) + "'");
      return error_at(ParseStatus::parse_error, t.line, "bad initializer '" + std::string(t.text) + "'");
    }
    if ((index + 1) * bytes > size) return error_at(ParseStatus::parse_error, t.line, "too many initializers");
    uint64_t bits = 0;
    std::string_view s = t.text;
    bool hexf = s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D');
    if (is_float(elem) && !hexf) {
      double d = std::strtod(std::string(s).c_str(), nullptr);
      if (neg) d = -d;
      if (elem == Type::f32) {
        float f = static_cast<float>(d);
        uint32_t b;
        std::memcpy(&b, &f, 4);
        bits = b;
      } else {
        std::memcpy(&bits, &d, 8);
      }
    } else if (hexf) {
      std::string_view h = s.substr(2);
      auto r = std::from_chars(h.data(), h.data() + h.size(), bits, 16);
      if (r.ec != std::errc()) return error_at(ParseStatus::parse_error, t.line, "bad literal");
      if ((s[1] == 'f' || s[1] == 'F') && elem == Type::f64) {
        float f;
        uint32_t b = static_cast<uint32_t>(bits);
        std::memcpy(&f, &b, 4);
        double d = f;
        std::memcpy(&bits, &d, 8);
      }
      if (neg) bits ^= uint64_t{1} << (bytes * 8 - 1);
    } else {
      auto v = parse_int(t);
      if (!v) return std::unexpected(v.error());
      bits = static_cast<uint64_t>(neg ? -*v : *v);
    }
    std::memcpy(init.data() + index * bytes, &bits, bytes);  // little-endian host
    ++index;
    return {};
  };
  do {
    while (accept("{")) ++depth;
    bool neg = accept("-");
    PTX_TRY(put(next(), neg));
    while (depth > 0 && accept("}")) --depth;
  } while (accept(","));
  if (depth != 0) return error(ParseStatus::parse_error, "unbalanced initializer");
  return {};
}

}  // namespace vgpu::ptx
