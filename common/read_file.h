// SPDX-License-Identifier: GPL-2.0-or-later
// The whole of a file as a string: for the PTX and other text the tests
// and the benches read in one piece.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace vgpu {

// The file's bytes, or nullopt when it cannot be opened or read.
inline std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// For a file a test cannot run without (one meson names in the source
// tree): its bytes, or "cannot read PATH" on stderr and abort.
inline std::string read_file_or_abort(const std::string& path) {
  auto text = read_file(path);
  if (!text) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  return *text;
}

}  // namespace vgpu
