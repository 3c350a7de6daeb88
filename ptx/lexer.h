// SPDX-License-Identifier: GPL-2.0-or-later
// PTX text -> tokens (docs/ptx.md, "Parser"). Words keep their dots
// (`ld.global.u32`, `%tid.x`, `.reg`); comments are dropped.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::ptx {

struct Token {
  enum class Kind : uint8_t { word, number, string, punct, end };
  Kind kind = Kind::end;
  std::string_view text;
  uint32_t line = 0;
};

struct LexError {
  uint32_t line;
  std::string message;
};

[[nodiscard]] std::expected<std::vector<Token>, LexError> tokenize(std::string_view text);

}  // namespace vgpu::ptx
