// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud --help and vgpud(8), both from the option table (options.cc).
#include <sstream>

#include "vgpud/options.h"

#ifndef VGPU_VERSION
#error "VGPU_VERSION comes from meson (the project's version)"
#endif

namespace vgpu::vgpud {
namespace {

constexpr const char* SUMMARY =
    "The vgpu host daemon: owns the GPU, the mediator and the scheduler, and serves one vGPU to each QEMU "
    "(-device vgpu,mode=fv,socket=PATH) or test client that connects. Runs in the foreground, logs to stderr with "
    "UTC timestamps (none under systemd's journal, which stamps lines itself), stops cleanly on SIGTERM or SIGINT. "
    "vgpuctl(1) shows and steers it through the control socket.";
constexpr size_t WIDTH = 79;
constexpr size_t HELP_COLUMN = 24;

// `text` folded at WIDTH, every line after the first indented by `indent`.
std::string fold(const std::string& text, size_t first_column, size_t indent) {
  std::istringstream words(text);
  std::string out, word;
  size_t column = first_column;
  bool line_start = true;
  while (words >> word) {
    if (!line_start && column + 1 + word.size() > WIDTH) {
      out.append(1, '\n').append(indent, ' ');
      column = indent;
      line_start = true;
    }
    if (!line_start) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    line_start = false;
  }
  return out;
}

std::string details(const OptionSpec& o) {
  std::string d = o.help;
  if (*o.bounds) d += std::string(" Accepted: ") + o.bounds + ".";
  if (*o.default_value) d += std::string(" Default: ") + o.default_value + ".";
  return d;
}

// roff: a leading dot or quote would be a request; backslashes escape.
std::string roff(const std::string& s) {
  std::string out = !s.empty() && (s[0] == '.' || s[0] == '\'') ? "\\&" : "";
  for (char c : s) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string version_text() { return std::string("vgpud (vgpu) ") + VGPU_VERSION + "\n"; }

std::string usage() {
  std::string out = "usage: vgpud [OPTION...]\n\n" + fold(SUMMARY, 0, 0) +
                    "\n\nOptions (--opt VALUE or --opt=VALUE):\n";
  for (const OptionSpec& o : options()) {
    std::string head = std::string("  ") + o.name + " " + o.value;
    if (head.size() + 2 > HELP_COLUMN)
      head.append(1, '\n').append(HELP_COLUMN, ' ');
    else
      head.append(HELP_COLUMN - head.size(), ' ');
    out += head + fold(details(o), HELP_COLUMN, HELP_COLUMN) + "\n";
  }
  out +=
      "  --help                this text\n"
      "  --version             the version\n"
      "  --man                 this text as the man page vgpud(8), in roff\n"
      "\nExit status: 0 stopped by a signal, 1 could not start, 2 a usage error.\n";
  return out;
}

std::string man_page() {
  std::string out = std::string(".TH VGPUD 8 \"\" \"vgpu ") + VGPU_VERSION +
                    "\" \"System Administration\"\n"
                    ".SH NAME\nvgpud \\- the vgpu host daemon: many QEMU VMs share one GPU\n"
                    ".SH SYNOPSIS\n.B vgpud\n[\\fIOPTION\\fR...]\n.SH DESCRIPTION\n" +
                    roff(SUMMARY) +
                    "\n.PP\nOptions take their value as \\fB\\-\\-opt VALUE\\fR or "
                    "\\fB\\-\\-opt=VALUE\\fR.\n.SH OPTIONS\n";
  for (const OptionSpec& o : options())
    out += ".TP\n.BR " + roff(o.name) + " \" \\fI" + roff(o.value) + "\\fR\"\n" + roff(details(o)) + "\n";
  out +=
      ".TP\n.B \\-\\-help\nThe options and what they do.\n"
      ".TP\n.B \\-\\-version\nThe version.\n"
      ".TP\n.B \\-\\-man\nThis page, in roff.\n"
      ".SH ENVIRONMENT\n.TP\n.B VGPUD_SOCKET\nThe socket when \\fB\\-\\-socket\\fR is not given "
      "(vgpuctl(1) and QEMU's clients read it too).\n"
      ".SH FILES\n.TP\n.I /run/vgpud/vgpud.sock\nThe default socket; its control socket is the same path plus "
      "\\fI.ctl\\fR.\n.TP\n.I vgpud.service\nThe systemd unit (RuntimeDirectory=vgpud, group vgpu).\n"
      ".SH EXIT STATUS\n0: stopped by SIGTERM or SIGINT; 1: could not start (the message says why); 2: a usage "
      "error.\n"
      ".SH SEE ALSO\nvgpuctl(1), qemu(1); docs/vgpud.md in the vgpu sources.\n";
  return out;
}

}  // namespace vgpu::vgpud
