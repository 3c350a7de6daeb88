// SPDX-License-Identifier: GPL-2.0-or-later
// The file a vgpu-bench command's --json names: the object, one key a line,
// then "JSON: <path>" on stdout. A file that cannot be written is a message
// on stderr naming the command and the path, and the command fails.
#pragma once

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace vgpu::bench {

template <class Json>
[[nodiscard]] bool write_json_file(const char* command, const std::string& path, const Json& j) {
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) {
    std::cerr << "vgpu-bench " << command << ": cannot write " << path << "\n";
    return false;
  }
  std::printf("JSON: %s\n", path.c_str());
  return true;
}

}  // namespace vgpu::bench
