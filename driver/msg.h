// SPDX-License-Identifier: GPL-2.0-or-later
// Error-message text (g++ 12 has no <format>): msg("{} of {}", a, b)
// replaces each "{}" with the next argument; hex(v) gives "0x..".
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/text.h"  // hex(v)

namespace vgpu::driver {

namespace detail {
inline void append(std::string& out, std::string_view s) { out += s; }
inline void append(std::string& out, const char* s) { out += s; }
inline void append(std::string& out, const std::string& s) { out += s; }
template <std::integral T>
void append(std::string& out, T v) {
  out += std::to_string(v);
}
inline void append(std::string& out, double v) { out += std::to_string(v); }
}  // namespace detail

template <typename... Args>
std::string msg(std::string_view format, const Args&... args) {
  std::string out;
  size_t pos = 0;
  auto one = [&](const auto& arg) {
    const size_t at = format.find("{}", pos);
    if (at == std::string_view::npos) return;
    out += format.substr(pos, at - pos);
    detail::append(out, arg);
    pos = at + 2;
  };
  (one(args), ...);
  out += format.substr(pos);
  return out;
}

}  // namespace vgpu::driver
