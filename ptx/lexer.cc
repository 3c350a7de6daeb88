// SPDX-License-Identifier: GPL-2.0-or-later
#include "ptx/lexer.h"

namespace vgpu::ptx {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '%' || c == '.' || c == ':';
}
bool word_start(char c) { return word_char(c) && !(c >= '0' && c <= '9') && c != ':'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::expected<std::vector<Token>, LexError> tokenize(std::string_view s) {
  std::vector<Token> out;
  uint32_t line = 1;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      uint32_t start = line;
      size_t j = i + 2;
      while (j + 1 < s.size() && !(s[j] == '*' && s[j + 1] == '/')) line += s[j++] == '\n' ? 1 : 0;
      if (j + 1 >= s.size()) return std::unexpected(LexError{start, "unterminated comment"});
      i = j + 2;
      continue;
    }
    size_t b = i;
    Token::Kind kind;
    if (c == '"') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') ++j;
      if (j >= s.size() || s[j] != '"') return std::unexpected(LexError{line, "unterminated string"});
      i = j + 1;
      kind = Token::Kind::string;
    } else if (digit(c)) {
      while (i < s.size() && (word_char(s[i]) && s[i] != ':' && s[i] != '%')) ++i;
      // a decimal exponent's sign: 1.5e-3
      while (i + 1 < s.size() && (s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E') && s[b] != '0' &&
             digit(s[i + 1])) {
        ++i;
        while (i < s.size() && word_char(s[i]) && s[i] != ':') ++i;
      }
      kind = Token::Kind::number;
    } else if (word_start(c)) {
      // A ':' ends a label; `.L1::evict_last` keeps its '::'.
      while (i < s.size() && word_char(s[i])) {
        if (s[i] == ':' && !(i + 1 < s.size() && s[i + 1] == ':') && !(i > 0 && s[i - 1] == ':')) break;
        ++i;
      }
      kind = Token::Kind::word;
    } else if (std::string_view(",;:[]{}()+-<>=@!|").find(c) != std::string_view::npos) {
      ++i;
      kind = Token::Kind::punct;
    } else if (c == '\0' && i + 1 == s.size()) {
      break;  // a trailing NUL
    } else {
      return std::unexpected(LexError{line, "unexpected character " + std::to_string(static_cast<unsigned char>(c))});
    }
    out.push_back(Token{kind, s.substr(b, i - b), line});
  }
  out.push_back(Token{Token::Kind::end, {}, line});
  return out;
}

}  // namespace vgpu::ptx
