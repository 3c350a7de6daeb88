// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud's command line: parsed into a DaemonConfig, or a message naming
// the option at fault.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "vgpud/daemon.h"

namespace vgpu::vgpud {

struct CommandLine {
  DaemonConfig config;
  bool help = false;
};

[[nodiscard]] Result<CommandLine> parse_command_line(const std::vector<std::string>& args);
// "512M", "4G", "1073741824": bytes; whole MiB (a suffix K, M, G or none).
[[nodiscard]] Result<uint64_t> parse_size(const std::string& text);
extern const char* const USAGE;

}  // namespace vgpu::vgpud
