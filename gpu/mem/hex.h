// SPDX-License-Identifier: GPL-2.0-or-later
// "0x..." text for error messages (g++ 12 has no <format>).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace vgpu::gpu {

inline std::string hex(uint64_t v) {
  char buf[2 + 16];
  buf[0] = '0';
  buf[1] = 'x';
  auto r = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
  return std::string(buf, r.ptr);
}

}  // namespace vgpu::gpu
