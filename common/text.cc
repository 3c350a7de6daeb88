// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/text.h"

#include <charconv>
#include <cstdarg>
#include <cstdio>

namespace vgpu {

std::string hex(uint64_t v) {
  char buf[2 + 16];
  buf[0] = '0';
  buf[1] = 'x';
  auto r = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
  return std::string(buf, r.ptr);
}

std::string strfmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), format, args);
    out.resize(static_cast<size_t>(n));
  }
  va_end(args);
  return out;
}

}  // namespace vgpu
