// SPDX-License-Identifier: GPL-2.0-or-later
// Text for error messages and reports (g++ 12 has no <format>).
#pragma once

#include <cstdint>
#include <string>

namespace vgpu {

// "0x1f00"
std::string hex(uint64_t v);

// printf-style formatting into a std::string.
std::string strfmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace vgpu
