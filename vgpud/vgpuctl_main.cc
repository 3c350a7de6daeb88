// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl's command line (CLI11), its --help and its man page vgpuctl(1),
// both from one table of commands (COMMANDS).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>

#include "common/text.h"
#include "vgpu/options.h"
#include "vgpud/vgpuctl.h"
#include "vgpud/wire.h"

#ifndef VGPU_VERSION
#error "VGPU_VERSION comes from meson (the project's version)"
#endif

namespace {

using namespace vgpu;
using namespace vgpu::vgpuctl;

struct CommandSpec {
  const char* name;
  const char* args;
  const char* help;
};
constexpr CommandSpec COMMANDS[] = {
    {"list", "",
     "The GPU's utilization over 1 s and 10 s, the daemon's VRAM (total, reserved for the daemon and its use, "
     "assigned to VMs, free), then one row per VM: name, pid, uid, its VRAM, the part it has touched, its shadow "
     "budget (used/reserved), channels, weight, share of the GPU time all VMs used and utilization (GPU time over "
     "wall time) over 1 s and 10 s, GPU time, trapped accesses, doorbells, faults."},
    {"stats", "[--json]", "The same and every VM's counters, as JSON (--json is the default and only format)."},
    {"set-weight", "VM WEIGHT", "The VM's scheduler weight, a whole number in [1, 100], at once."},
    {"workers", "",
     "With vgpud --backend cuda: one row per VM, its worker process's pid, state, restarts, device and last "
     "failure."},
    {"watch", "[--interval S]", "list, every S seconds (default 1, above 0) until interrupted."},
    {"plot", "--seconds S --png FILE",
     "Sample each VM's GPU time for S seconds and plot to FILE with gnuplot its share over the last 2 s, "
     "per 250 ms window, and the target its weight gives it (data in FILE.dat)."},
};
constexpr const char* SOCKET_HELP =
    "The daemon's socket (vgpuctl adds .ctl for its control socket) or the control socket itself. "
    "Default: $VGPUD_SOCKET, else /run/vgpud/vgpud.sock.";
constexpr const char* TIMEOUT_HELP =
    "How long to wait for the daemon, in seconds (fractions allowed). Default: $VGPUD_TIMEOUT, else 5.";

std::string usage() {
  std::string out =
      "usage: vgpuctl [--socket PATH] [--timeout S] COMMAND [ARGS]\n\n"
      "Shows and steers a running vgpud through its control socket.\n\nCommands:\n";
  for (const CommandSpec& c : COMMANDS) out += strfmt("  %s %s\n      %s\n", c.name, c.args, c.help);
  out += std::string("\nOptions (--opt VALUE or --opt=VALUE):\n  --socket PATH\n      ") + SOCKET_HELP +
         "\n  --timeout S\n      " + TIMEOUT_HELP +
         "\n  --help, --version, --man (this text as the man page vgpuctl(1))\n"
         "\nExit status: 0 done, 1 the daemon refused or could not be reached (or is not vgpud), 2 a usage error.\n";
  return out;
}

std::string roff(std::string s) {
  std::string out;
  for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

std::string man_page() {
  std::string out = std::string(".TH VGPUCTL 1 \"\" \"vgpu ") + VGPU_VERSION +
                    "\" \"User Commands\"\n.SH NAME\nvgpuctl \\- show and steer the vgpu host daemon\n"
                    ".SH SYNOPSIS\n.B vgpuctl\n[\\fB\\-\\-socket\\fR \\fIPATH\\fR] [\\fB\\-\\-timeout\\fR \\fIS\\fR] "
                    "\\fICOMMAND\\fR [\\fIARGS\\fR]\n.SH DESCRIPTION\nShows and steers a running vgpud(8) through "
                    "its control socket.\n.SH COMMANDS\n";
  for (const CommandSpec& c : COMMANDS)
    out += ".TP\n.B " + roff(c.name) + " " + roff(c.args) + "\n" + roff(c.help) + "\n";
  out += ".SH OPTIONS\n.TP\n.BI \\-\\-socket \" PATH\"\n" + roff(SOCKET_HELP) + "\n.TP\n.BI \\-\\-timeout \" S\"\n" +
         roff(TIMEOUT_HELP) +
         "\n.TP\n.B \\-\\-help\nThe commands and options.\n.TP\n.B \\-\\-version\nThe version.\n"
         ".TP\n.B \\-\\-man\nThis page, in roff.\n"
         ".SH ENVIRONMENT\n.TP\n.B VGPUD_SOCKET\nThe socket when \\-\\-socket is not given.\n"
         ".TP\n.B VGPUD_TIMEOUT\nThe time limit when \\-\\-timeout is not given.\n"
         ".SH EXIT STATUS\n0: done; 1: the daemon refused, could not be reached, did not answer in time, or is not "
         "vgpud; 2: a usage error.\n.SH SEE ALSO\nvgpud(8)\n";
  return out;
}

// CLI11 validators: "" or what is wrong.
CLI::Validator positive_seconds(const std::string& what) {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        double d = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size() || !(d > 0) || d > 1e6)
          return "'" + v + "' is not a number of seconds above 0";
        return "";
      },
      "S", what);
}

CLI::Validator whole_weight() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        uint32_t w = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), w);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size() || w < 1 || w > VGPU_OPT_WEIGHT_MAX)
          return strfmt("'%s' is not a whole number in [1, %u]", v.c_str(), VGPU_OPT_WEIGHT_MAX);
        return "";
      },
      "WEIGHT", "weight");
}

double seconds_of(const std::string& v) { return std::strtod(v.c_str(), nullptr); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("vgpuctl");
  app.set_help_flag();
  bool help = false, version = false, man = false;
  std::string socket = vgpud::default_socket(), timeout;
  app.add_flag("-h,--help", help);
  app.add_flag("--version", version);
  app.add_flag("--man", man);
  app.add_option("--socket", socket)->type_name("PATH");
  app.add_option("--timeout", timeout)->check(positive_seconds("--timeout"));
  auto* list = app.add_subcommand("list");
  auto* stats = app.add_subcommand("stats");
  bool json = false;
  stats->add_flag("--json", json);
  auto* set_weight = app.add_subcommand("set-weight");
  std::string vm, weight;
  set_weight->add_option("VM", vm)->required();
  set_weight->add_option("WEIGHT", weight)->required()->check(whole_weight());
  auto* workers = app.add_subcommand("workers");
  auto* watch_cmd = app.add_subcommand("watch");
  std::string interval = "1";
  watch_cmd->add_option("--interval", interval)->check(positive_seconds("--interval"));
  auto* plot_cmd = app.add_subcommand("plot");
  std::string seconds, png;
  plot_cmd->add_option("--seconds", seconds)->required()->check(positive_seconds("--seconds"));
  plot_cmd->add_option("--png", png)->required()->type_name("FILE");
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Named for its command: "set-weight: VM is required".
    std::string where;
    for (const CLI::App* sub : app.get_subcommands()) where = sub->get_name() + ": ";
    std::fprintf(stderr, "vgpuctl: %s%s (see --help)\n", where.c_str(), e.what());
    return EXIT_USAGE;
  }
  if (help || version || man) {
    std::fputs(help ? usage().c_str() : man ? man_page().c_str() : "vgpuctl (vgpu) " VGPU_VERSION "\n", stdout);
    return 0;
  }
  if (app.get_subcommands().empty()) {
    std::fprintf(stderr,
                 "vgpuctl: a command is missing: list, stats, set-weight, workers, watch or plot (see --help)\n");
    return EXIT_USAGE;
  }
  Target t{control_path(socket), 0};
  auto ms = timeout.empty() ? vgpud::timeout_from_env() : vgpud::parse_timeout("--timeout", timeout);
  if (!ms) {
    std::fprintf(stderr, "vgpuctl: %s\n", ms.error().message.c_str());
    return EXIT_USAGE;
  }
  t.timeout_ms = *ms;
  if (*list) return answer(ask(t, "list"));
  if (*stats) return answer(ask(t, "stats"), true);
  if (*set_weight) return answer(ask(t, "set-weight " + vm + " " + weight));
  if (*workers) return answer(ask(t, "workers"));
  if (*watch_cmd) return watch(t, seconds_of(interval));
  return plot(t, seconds_of(seconds), png);
}
