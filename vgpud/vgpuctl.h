// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl's pieces shared by its commands (vgpuctl.cc) and its plot
// (vgpuctl_plot.cc): one request to the daemon's control socket, with the
// protocol's first line checked and a time limit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/error.h"

namespace vgpu::vgpuctl {

struct Target {
  std::string control;  // the control socket's path
  uint32_t timeout_ms;  // for connecting and for the whole answer
};

// The control socket of the daemon at `socket` (PATH.ctl, or PATH when it
// ends in .ctl).
std::string control_path(const std::string& socket);

// The daemon's answer to `line` without its first line, or an error that
// names the socket: unreachable, "PATH does not speak the vgpud protocol",
// "vgpud at PATH did not answer in N s".
[[nodiscard]] Result<std::string> ask(const Target& t, const std::string& line);

// "time_ns\nname gpu_ns\n..." from the daemon's `shares`.
struct Shares {
  uint64_t t = 0;
  std::map<std::string, uint64_t> gpu_ns;
};
[[nodiscard]] Result<Shares> shares(const Target& t);

// Exit statuses: done, the daemon refused or could not be reached, usage.
inline constexpr int EXIT_FAILED = 1;
inline constexpr int EXIT_USAGE = 2;

// The daemon's answer on stdout, or an "error:" answer (and any failure)
// on stderr with EXIT_FAILED; `json`: the answer must be JSON.
int answer(const Result<std::string>& r, bool json = false);
// `list` every `interval` seconds until interrupted or the daemon goes.
int watch(const Target& t, double interval);

// vgpuctl plot: 0 or EXIT_FAILED, messages on stderr.
int plot(const Target& t, double seconds, const std::string& png);

}  // namespace vgpu::vgpuctl
