// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/module_globals.h"

#include <cctype>
#include <map>

namespace vgpu::worker {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// True if the line at `at` declares a module-scope .global or .const variable.
bool declares_variable(std::string_view s, size_t at) {
  size_t eol = s.find('\n', at);
  std::string_view line = s.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
  size_t p = 0;
  for (;;) {
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) p++;
    size_t w = p;
    while (p < line.size() && !std::isspace(static_cast<unsigned char>(line[p]))) p++;
    std::string_view word = line.substr(w, p - w);
    if (word == ".visible" || word == ".extern" || word == ".weak") continue;
    return word == ".global" || word == ".const";
  }
}

// The text without module-scope .global/.const declarations (each up to
// its ';', initializer braces included). Comments are copied as they are.
std::string drop_declarations(std::string_view s) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < s.size();) {
    bool line_start = i == 0 || s[i - 1] == '\n';
    if (line_start && depth == 0 && declares_variable(s, i)) {
      size_t semi = s.find(';', i);
      i = semi == std::string_view::npos ? s.size() : semi + 1;
      continue;
    }
    if (s.compare(i, 2, "//") == 0) {
      size_t eol = s.find('\n', i);
      size_t end = eol == std::string_view::npos ? s.size() : eol;
      out.append(s.substr(i, end - i));
      i = end;
      continue;
    }
    if (s[i] == '{') depth++;
    if (s[i] == '}') depth--;
    out += s[i++];
  }
  return out;
}

// The register each function body gets holding the data segment's
// address: ptxas takes an immediate address for .local space only, so
// `[name+N]` becomes `[%__vgpu_data+OFFSET]`.
constexpr std::string_view DATA_REG = "%__vgpu_data";

// Replaces every token naming a variable: `[name+N]` / `[name]` by the
// data register plus the variable's offset, any other use by its absolute
// address as an immediate.
std::string substitute(const std::string& s, const std::map<std::string, uint64_t, std::less<>>& addr,
                       uint64_t data_va) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    bool starts = ident_start(s[i]) && (i == 0 || (!ident_char(s[i - 1]) && s[i - 1] != '%' && s[i - 1] != '.'));
    if (!starts) {
      out += s[i++];
      continue;
    }
    size_t e = i;
    while (e < s.size() && ident_char(s[e])) e++;
    auto it = addr.find(std::string_view(s).substr(i, e - i));
    if (it == addr.end()) {
      out.append(s, i, e - i);
      i = e;
      continue;
    }
    uint64_t a = it->second;
    if (e < s.size() && s[e] == '+') {  // name+N inside an address
      size_t d = e + 1;
      while (d < s.size() && std::isdigit(static_cast<unsigned char>(s[d]))) d++;
      if (d > e + 1) a += std::stoull(s.substr(e + 1, d - e - 1));
      e = d;
    }
    if (i > 0 && s[i - 1] == '[')
      out.append(DATA_REG).append("+").append(std::to_string(a - data_va));
    else
      out += std::to_string(a);
    i = e;
  }
  return out;
}

// Every function body (a brace at module scope) starts by setting the
// data register.
std::string set_data_register(const std::string& s, uint64_t data_va) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < s.size(); i++) {
    if (s.compare(i, 2, "//") == 0) {
      size_t eol = s.find('\n', i);
      size_t end = eol == std::string::npos ? s.size() : eol;
      out.append(s, i, end - i);
      i = end - 1;
      continue;
    }
    out += s[i];
    if (s[i] == '}') depth--;
    if (s[i] != '{' || depth++ != 0) continue;
    out.append("\n\t.reg .u64 ").append(DATA_REG).append(";\n\tmov.u64 ").append(DATA_REG).append(", ");
    out.append(std::to_string(data_va)).append(";");
  }
  return out;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::optional<std::string> place_globals(std::string_view ptx, const ptx::Module& m, uint64_t data_va,
                                         std::string& why) {
  std::map<std::string, uint64_t, std::less<>> addr;
  for (const ptx::Variable& v : m.variables())
    if (v.space != ptx::Space::shared) addr[v.name] = data_va + v.offset;
  if (addr.empty()) return std::string(ptx);
  std::string text = set_data_register(substitute(drop_declarations(ptx), addr, data_va), data_va);
  // An address taken with cvta is now an immediate: a mov (global and
  // generic addresses are the same on the GPU, as in the model).
  for (std::string_view sp : {"cvta.global.u64", "cvta.const.u64"}) {
    for (size_t at = text.find(sp); at != std::string::npos; at = text.find(sp, at + 1)) {
      size_t semi = text.find(';', at), comma = text.rfind(',', semi);
      if (semi == std::string::npos || comma == std::string::npos || comma < at) {
        why = "a " + std::string(sp) + " the rewrite does not know";
        return std::nullopt;
      }
      std::string operand = text.substr(comma + 1, semi - comma - 1);
      size_t f = operand.find_first_not_of(" \t");
      if (f != std::string::npos && std::isdigit(static_cast<unsigned char>(operand[f])))
        text.replace(at, sp.size(), "mov.u64");
    }
  }
  // .const space reads global memory at the guest's address.
  for (const char* op : {"ld.const.", "ldu.const.", "cvta.to.const.", "cvta.const."})
    text = replace_all(text, op, std::string(op).replace(std::string(op).find("const"), 5, "global"));
  return text;
}

std::optional<std::string> module_for_device(std::string_view ptx, uint64_t data_va, std::string& why) {
  auto parsed = ptx::parse_module(ptx);
  if (!parsed) {
    why = "the module does not parse: " + parsed.error().message;
    return std::nullopt;
  }
  auto placed = place_globals(ptx, **parsed, data_va, why);
  if (!placed) why = "module variables: " + why;
  return placed;
}

}  // namespace vgpu::worker
