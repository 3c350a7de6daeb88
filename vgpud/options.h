// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud's command line, declared once in a table (options()): each
// option's name, value, unit, default, bounds and help, and what it sets.
// The device's options among them (the host-wide ones and every VM's
// defaults) are rows of the option table (vgpu/option_table.h): their
// help, bounds, parse and messages are its.
// The parser (CLI11), `--help` and the man page (`--man`, vgpud(8)) all
// come from it. Errors name the option at fault.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "vgpud/daemon.h"

namespace vgpu::vgpud {

struct CommandLine {
  DaemonConfig config;
  bool max_gpu_ms_given = false;
  bool worker_given = false;    // --worker-device or --worker-binary
  bool default_socket = false;  // no --socket: $VGPUD_SOCKET or DEFAULT_SOCKET
  bool help = false;
  bool version = false;
  bool man = false;
};

struct OptionSpec {
  const char* name;           // "--vram"
  const char* value;          // "SIZE"
  const char* default_value;  // as text, "" for none
  const char* bounds;         // accepted values or range, "" for any
  const char* help;           // one sentence or a few
  Status (*apply)(CommandLine& cl, const std::string& value);
};
std::span<const OptionSpec> options();

[[nodiscard]] Result<CommandLine> parse_command_line(const std::vector<std::string>& args);
// "512M", "4G", "1073741824": bytes; whole MiB (a suffix K, M, G or none).
[[nodiscard]] Result<uint64_t> parse_size(const std::string& text);

// --backend cuda's vgpu-worker when --worker-binary is not given: the one
// beside `vgpud_path` (vgpud's own executable), then ../worker/vgpu-worker
// from it (vgpud in a build tree), then `installed` (libexecdir); the
// first that is executable, or an error naming each path tried.
[[nodiscard]] Result<std::string> find_worker_binary(const std::string& vgpud_path, const std::string& installed);

// From the table: `vgpud --help`, and the man page vgpud(8) in roff.
std::string usage();
std::string man_page();
std::string version_text();

}  // namespace vgpu::vgpud
