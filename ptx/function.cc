// SPDX-License-Identifier: GPL-2.0-or-later
// .entry and .func: parameter lists, bodies, registers, labels, calls.
#include <algorithm>
#include <charconv>

#include "ptx/parser.h"

namespace vgpu::ptx {
namespace {

uint32_t align_up32(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

}  // namespace

// ( .param [.align N] .type [.ptr...] name[[N]] , ... )
Status Parser::parse_param_list(std::vector<Param>& out, uint32_t& end) {
  PTX_TRY(expect("("));
  if (accept(")")) return {};
  do {
    if (peek().text == ".reg") return error(ParseStatus::unsupported, "unsupported .reg parameter");
    PTX_TRY(expect(".param"));
    uint32_t align = 0;
    Type type = Type::none;
    while (peek().kind == Token::Kind::word && peek().text[0] == '.') {
      std::string_view w = next().text;
      if (w == ".align") {
        auto n = parse_int(next());
        if (!n) return std::unexpected(n.error());
        if (*n <= 0 || *n > 4096 || (*n & (*n - 1)) != 0) return error(ParseStatus::parse_error, "bad .align");
        align = static_cast<uint32_t>(*n);
      } else if (w == ".ptr" || w == ".global" || w == ".shared" || w == ".const" || w == ".local") {
      } else {
        auto t = attribute_type(w, "parameter");
        if (!t) return std::unexpected(t.error());
        type = *t;
      }
    }
    if (type == Type::none) return error(ParseStatus::parse_error, "parameter without a type");
    const Token& name = next();
    if (name.kind != Token::Kind::word)
      return error_at(ParseStatus::parse_error, name.line, "expected a parameter name");
    uint32_t size = type_bytes(type);
    if (accept("[")) {
      auto n = parse_int(next());
      if (!n) return std::unexpected(n.error());
      if (*n <= 0 || *n > limits_.max_param_bytes) return error(ParseStatus::too_large, "parameter array too large");
      size *= static_cast<uint32_t>(*n);
      PTX_TRY(expect("]"));
    }
    if (align == 0) align = type_bytes(type);
    uint32_t off = align_up32(end, align);
    if (uint64_t{off} + size > limits_.max_param_bytes)
      return error(ParseStatus::too_large, "parameters over " + std::to_string(limits_.max_param_bytes) + " bytes");
    out.push_back(Param{std::string(name.text), off, size, align});
    end = off + size;
  } while (accept(","));
  return expect(")");
}

// .maxntid/.reqntid (their product is max_threads), and the directives read and ignored.
Status Parser::parse_performance_directives(uint32_t& max_threads) {
  for (;;) {  // performance directives
    std::string_view w = peek().text;
    if (w == ".maxntid" || w == ".reqntid") {
      next();
      uint64_t prod = 1;
      do {
        auto n = parse_int(next());
        if (!n) return std::unexpected(n.error());
        prod *= static_cast<uint64_t>(std::clamp<int64_t>(*n, 0, 1 << 16));
      } while (accept(","));
      max_threads = static_cast<uint32_t>(std::min<uint64_t>(prod, UINT32_MAX));
    } else if (w == ".minnctapersm" || w == ".maxnreg" || w == ".maxnctapersm") {
      next();
      next();
    } else if (w == ".noreturn") {
      next();
    } else if (w == ".pragma") {
      while (peek().kind != Token::Kind::end && !accept(";")) next();
    } else {
      break;
    }
  }
  return {};
}

Status Parser::parse_function(bool is_entry, bool is_extern) {
  uint32_t line = peek().line;
  std::vector<Param> rets, params;
  uint32_t end = 0;
  if (!is_entry && peek().text == "(") PTX_TRY(parse_param_list(rets, end));
  const Token& name_tok = next();
  if (name_tok.kind != Token::Kind::word)
    return error_at(ParseStatus::parse_error, name_tok.line, "expected a function name");
  std::string name(name_tok.text);
  if (peek().text == "(") PTX_TRY(parse_param_list(params, end));
  uint32_t max_threads = 0;
  PTX_TRY(parse_performance_directives(max_threads));
  uint32_t index;
  if (auto it = func_index_.find(name); it != func_index_.end()) {
    index = it->second;
    if (prog_->functions[index].is_entry != is_entry)
      return error_at(ParseStatus::parse_error, line, "'" + name + "' declared twice differently");
  } else {
    index = static_cast<uint32_t>(prog_->functions.size());
    Function f;
    f.name = name;
    f.is_entry = is_entry;
    f.line = line;
    if (!is_entry) {
      for (auto& p : rets) f.ret_params.push_back({p.offset, p.size});
      for (auto& p : params) f.params.push_back({p.offset, p.size});
      f.param_frame_bytes = end;
    }
    prog_->functions.push_back(std::move(f));
    func_index_[name] = index;
  }
  if (accept(";")) return {};  // a prototype
  if (is_extern) return error(ParseStatus::parse_error, ".extern function '" + name + "' with a body");
  Function& fn = prog_->functions[index];
  if (fn.defined) return error_at(ParseStatus::parse_error, line, "'" + name + "' defined twice");
  fn.defined = true;
  if (is_entry) {
    if (mod_->entries_.size() >= limits_.max_entries)
      return error(ParseStatus::too_large, "more than " + std::to_string(limits_.max_entries) + " entries");
    EntryInfo e{name, params, end, 0, max_threads};
    mod_->entries_.push_back(std::move(e));
    prog_->entry_functions.push_back(index);
  }
  // The function's scope: its parameters.
  regs_.clear();
  num_regs_ = 0;
  labels_.clear();
  branch_fixups_.clear();
  scopes_.assign(1, {});
  scope_regs_.assign(1, {});
  scope_param_top_.clear();
  local_top_ = 0;
  param_top_ = is_entry ? 0 : end;
  in_entry_ = is_entry;
  cur_func_ = index;
  for (auto& p : rets) scopes_[0][p.name] = Symbol{AddrBase::fparam, p.offset, p.size, false};
  for (auto& p : params)
    scopes_[0][p.name] = Symbol{is_entry ? AddrBase::kparam : AddrBase::fparam, p.offset, p.size, false};
  return parse_body(index);
}

Status Parser::parse_body(uint32_t func) {
  prog_->functions[func].first = static_cast<uint32_t>(prog_->code.size());
  PTX_TRY(expect("{"));
  size_t depth = 1;
  while (depth > 0) {
    const Token& t = peek();
    if (t.kind == Token::Kind::end) return error(ParseStatus::parse_error, "unexpected end of text in a function body");
    if (t.text == "{" && t.kind == Token::Kind::punct) {
      next();
      ++depth;
      scopes_.emplace_back();
      scope_regs_.emplace_back();
      scope_param_top_.push_back(param_top_);
      continue;
    }
    if (t.text == "}" && t.kind == Token::Kind::punct) {
      next();
      if (--depth > 0) {
        scopes_.pop_back();
        for (auto& k : scope_regs_.back()) regs_[k].pop_back();
        scope_regs_.pop_back();
        param_top_ = scope_param_top_.back();
        scope_param_top_.pop_back();
      }
      continue;
    }
    PTX_TRY(parse_body_statement(func));
  }
  return finish_function(func);
}

Status Parser::parse_reg_decl() {
  Type type = Type::none;
  while (peek().kind == Token::Kind::word && peek().text[0] == '.') {
    std::string_view w = next().text;
    if (w == ".v2" || w == ".v4") return error(ParseStatus::unsupported, "unsupported vector register");
    auto t = attribute_type(w, "register");
    if (!t) return std::unexpected(t.error());
    type = *t;
  }
  if (type == Type::none) return error(ParseStatus::parse_error, "register without a type");
  do {
    const Token& name = next();
    if (name.kind != Token::Kind::word)
      return error_at(ParseStatus::parse_error, name.line, "bad register name '" + std::string(name.text) + "'");
    uint32_t count = 1;
    bool range = false;
    if (accept("<")) {
      auto n = parse_int(next());
      if (!n) return std::unexpected(n.error());
      if (*n < 0 || *n > limits_.max_registers)
        return error(ParseStatus::too_large, "more than " + std::to_string(limits_.max_registers) + " registers");
      count = static_cast<uint32_t>(*n);
      range = true;
      PTX_TRY(expect(">"));
    }
    if (uint64_t{num_regs_} + count > limits_.max_registers)
      return error(ParseStatus::too_large, "more than " + std::to_string(limits_.max_registers) + " registers");
    std::string key = std::string(name.text) + (range ? "<>" : "");
    regs_[key].push_back(RegRange{num_regs_, count, range});
    scope_regs_.back().push_back(key);
    num_regs_ += count;
  } while (accept(","));
  return expect(";");
}

Status Parser::parse_body_statement(uint32_t func) {
  const Token& t = peek();
  std::string_view w = t.text;
  if (t.kind == Token::Kind::word && w[0] == '.') {
    if (w == ".loc" || w == ".file") {
      uint32_t line = t.line;
      while (peek().kind != Token::Kind::end && peek().line == line) next();
      return {};
    }
    next();
    if (w == ".reg") return parse_reg_decl();
    if (w == ".pragma") {
      while (peek().kind != Token::Kind::end && !accept(";")) next();
      return {};
    }
    if (w == ".local") return parse_variable(Space::global, false, false, AddrBase::local);
    if (w == ".param") return parse_variable(Space::global, false, false, AddrBase::fparam);
    if (w == ".shared") {
      // Function-scope shared memory: laid out with the module's.
      auto n = mod_->variables_.size();
      PTX_TRY(parse_variable(Space::shared, false, true, AddrBase::shared));
      for (auto i = n; i < mod_->variables_.size(); ++i) {
        scopes_.back()[mod_->variables_[i].name] = globals_[mod_->variables_[i].name];
      }
      return {};
    }
    return error(ParseStatus::unsupported, "unsupported directive '" + std::string(w) + "' in a function body");
  }
  if (t.kind == Token::Kind::word && peek(1).text == ":" && peek(1).kind == Token::Kind::punct) {
    std::string label(w);
    next();
    next();
    if (labels_.contains(label)) return error(ParseStatus::parse_error, "label '" + label + "' defined twice");
    labels_[label] = static_cast<uint32_t>(prog_->code.size());
    return {};
  }
  uint32_t guard = kNoReg;
  bool neg = false;
  uint32_t line = t.line;
  if (accept("@")) {
    neg = accept("!");
    const Token& p = next();
    auto r = lookup_reg(p.text);
    if (!r) return std::unexpected(r.error());
    guard = *r;
  }
  const Token& op = next();
  if (op.kind != Token::Kind::word)
    return error_at(ParseStatus::parse_error, op.line, "expected an instruction, found '" + std::string(op.text) + "'");
  if (prog_->code.size() >= limits_.max_instructions)
    return error(ParseStatus::too_large, "more than " + std::to_string(limits_.max_instructions) + " instructions");
  (void)func;
  return decode_instruction(op.text, guard, neg, line);
}

std::expected<uint32_t, ParseError> Parser::lookup_reg(std::string_view name) const {
  if (auto it = regs_.find(std::string(name)); it != regs_.end() && !it->second.empty()) return it->second.back().base;
  size_t d = name.size();
  while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') --d;
  if (d < name.size() && d > 0) {
    if (auto it = regs_.find(std::string(name.substr(0, d)) + "<>"); it != regs_.end() && !it->second.empty()) {
      const RegRange& rr = it->second.back();
      uint32_t i = 0;
      auto r = std::from_chars(name.data() + d, name.data() + name.size(), i);
      bool leading_zero = name.size() - d > 1 && name[d] == '0';
      if (r.ec == std::errc() && !leading_zero && i < rr.count) return rr.base + i;
    }
  }
  return error(ParseStatus::parse_error, "unknown register '" + std::string(name) + "'");
}

const Symbol* Parser::lookup_symbol(std::string_view name) const {
  std::string n(name);
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (auto f = it->find(n); f != it->end()) return &f->second;
  if (auto f = globals_.find(n); f != globals_.end()) return &f->second;
  return nullptr;
}

Status Parser::finish_function(uint32_t func) {
  Function& fn = prog_->functions[func];
  fn.end = static_cast<uint32_t>(prog_->code.size());
  fn.num_regs = num_regs_;
  fn.local_bytes = local_top_;
  for (auto& f : branch_fixups_) {
    auto it = labels_.find(f.label);
    if (it == labels_.end()) return error_at(ParseStatus::parse_error, f.line, "unknown label '" + f.label + "'");
    prog_->code[f.instr].target = it->second;
  }
  // A body that falls off its end returns (or exits).
  if (fn.end == fn.first || prog_->code[fn.end - 1].op != Op::ret || prog_->code[fn.end - 1].guard != kNoReg) {
    Instr r;
    r.op = Op::ret;
    r.line = peek().line;
    prog_->code.push_back(r);
    fn.end++;
  }
  prog_->max_regs = std::max(prog_->max_regs, fn.num_regs);
  prog_->max_param_frame = std::max(prog_->max_param_frame, fn.param_frame_bytes);
  return {};
}

Status Parser::finish_module() {
  if (mod_->target_.empty()) return error(ParseStatus::parse_error, "no .target directive");
  for (auto& c : pending_calls_) {
    if (!prog_->functions[prog_->calls[c.site].callee].defined)
      return error_at(ParseStatus::unsupported, c.line, "call to external function '" + c.callee + "'");
  }
  uint64_t dyn = (shared_end_ + shared_align_ - 1) / shared_align_ * shared_align_;
  for (auto& v : mod_->variables_)
    if (v.external) v.offset = dyn;
  for (auto [i, slot] : extern_shared_fixups_) {
    Instr& in = prog_->code[i];
    Operand& o = slot < 2 ? in.dst[slot] : in.src[slot - 2];
    o.imm += dyn;
  }
  prog_->static_shared_bytes = static_cast<uint32_t>(shared_end_);
  prog_->dynamic_shared_offset = static_cast<uint32_t>(dyn);
  for (auto& e : mod_->entries_) e.static_shared_bytes = static_cast<uint32_t>(shared_end_);
  return {};
}

}  // namespace vgpu::ptx
