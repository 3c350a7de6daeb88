// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/options.h"

#include "worker/find_binary.h"

#include <grp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "common/text.h"
#include "vgpu/option_table.h"

namespace vgpu::vgpud {
namespace {

constexpr uint32_t MAX_VMS = 64;
constexpr uint32_t MAX_YIELD_US = 1'000'000;

// A whole number in [lo, hi], all of the text.
Result<uint32_t> parse_count(const std::string& opt, const std::string& text, uint32_t lo, uint32_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || v < lo || v > hi)
    return fail(Errc::invalid_argument,
                strfmt("%s: '%s' is not a whole number in [%u, %u]", opt.c_str(), text.c_str(), lo, hi));
  return static_cast<uint32_t>(v);
}

Status set_count(const char* opt, const std::string& v, uint32_t lo, uint32_t hi, uint32_t& dst) {
  auto n = parse_count(opt, v, lo, hi);
  if (!n) return std::unexpected(n.error());
  dst = *n;
  return {};
}

Status set_vram(CommandLine& cl, const std::string& v) {
  auto b = parse_size(v);
  if (!b) return std::unexpected(b.error().context("--vram"));
  cl.config.vram_bytes = *b;
  return {};
}

Status set_yield(CommandLine& cl, const std::string& v) {
  uint32_t us = 0;
  if (Status s = set_count("--yield-us", v, 1, MAX_YIELD_US, us); !s) return s;
  cl.config.sched_params.yield_window_ns = uint64_t{us} * 1000;
  return {};
}

// A path: anything but empty.
Status set_path(const char* opt, const std::string& v, std::string& dst) {
  if (v.empty()) return fail(Errc::invalid_argument, std::string(opt) + ": empty path");
  dst = v;
  return {};
}

// The table's backend: cuda is one worker process per VM (the engines'
// device is the workers'; vgpud itself makes no CUDA call).
Status set_backend(CommandLine& cl, const std::string& v) {
  if (v == "worker")
    return fail(Errc::invalid_argument,
                "backend: 'worker' is now 'cuda' (vgpud's cuda back end is one worker process per VM)");
  uint64_t unused = 0;
  char err[256];
  if (!vgpu_option_parse(vgpu_option_find(VGPU_OPT_BACKEND), v.c_str(), &unused, err, sizeof err))
    return fail(Errc::invalid_argument, err);
  cl.config.engine_backend = v == "cuda" ? gpu::EngineBackend::worker : gpu::EngineBackend::model;
  return {};
}

Status set_group(CommandLine& cl, const std::string& v) {
  if (group* g = getgrnam(v.c_str())) {
    cl.config.group = g->gr_gid;
    return {};
  }
  char* end = nullptr;
  const long long id = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || id < 0) return fail(Errc::invalid_argument, "--group: no group '" + v + "'");
  cl.config.group = static_cast<gid_t>(id);
  return {};
}

// An option of the option table (vgpu/option_table.h): its parse, check
// and message are the table's, as QEMU's, the C API's and the benches'.
template <typename T>
Status set_row(const char* name, const std::string& text, T& dst) {
  uint64_t n = 0;
  char err[256];
  if (!vgpu_option_parse(vgpu_option_find(name), text.c_str(), &n, err, sizeof err))
    return fail(Errc::invalid_argument, err);
  dst = static_cast<T>(n);
  return {};
}

// A named option of the table (a scheduler, a device): checked by the
// table, kept as written.
Status set_row(const char* name, const std::string& text, std::string& dst) {
  uint64_t unused = 0;
  if (Status s = set_row(name, text, unused); !s) return s;
  dst = text;
  return {};
}

// The row's flag, value name and help (its bounds and what 0 means
// included); the default as the row has it unless vgpud's differs (dflt).
OptionSpec row(const char* name, const char* value, Status (*apply)(CommandLine&, const std::string&),
               const char* dflt = nullptr) {
  static std::deque<std::string> text;  // the specs' strings, alive as the table
  const VgpuOption* o = vgpu_option_find(name);
  const std::string& flag = text.emplace_back(std::string("--") + name);
  // The bounds are in the table's help line.
  return {flag.c_str(),
          value,
          dflt ? dflt : o->dflt_text,
          "",
          text.emplace_back(vgpu_option_help(o) + std::string(".")).c_str(),
          apply};
}

const std::vector<OptionSpec>& table() {
  static const std::vector<OptionSpec> specs = {
      {"--socket", "PATH", "$VGPUD_SOCKET, else /run/vgpud/vgpud.sock", "",
       "Where VMs connect (-device vgpu,mode=fv,socket=PATH): a Unix socket, created mode 0660.",
       [](CommandLine& cl, const std::string& v) { return set_path("--socket", v, cl.config.socket); }},
      {"--control", "PATH", "the socket's path + .ctl", "", "vgpuctl's socket.",
       [](CommandLine& cl, const std::string& v) { return set_path("--control", v, cl.config.control_socket); }},
      {"--vram", "SIZE", "4G", "whole MiB, at most the host's memory",
       "The GPU's VRAM, the part reserved for the daemon included; a number of bytes or one with a K, M or G suffix.",
       set_vram},
      row(VGPU_OPT_SCHEDULER, "NAME",
          [](CommandLine& cl, const std::string& v) { return set_row(VGPU_OPT_SCHEDULER, v, cl.config.scheduler); }),
      {"--max-vms", "N", "8", "1..64",
       "VMs served at once; each slot reserves 24 MiB of VRAM for the daemon's shadows.",
       [](CommandLine& cl, const std::string& v) { return set_count("--max-vms", v, 1, MAX_VMS, cl.config.max_vms); }},
      {"--yield-us", "US", "500", "1..1000000", "BAND's yield window in microseconds (Gdev's; docs/scheduler.md).",
       set_yield},
      row(VGPU_OPT_TURN_MS, "MS",
          [](CommandLine& cl, const std::string& v) { return set_row(VGPU_OPT_TURN_MS, v, cl.config.turn_ms); }),
      row(
          VGPU_OPT_MAX_GPU_MS, "MS",
          [](CommandLine& cl, const std::string& v) {
            cl.max_gpu_ms_given = true;
            return set_row(VGPU_OPT_MAX_GPU_MS, v, cl.config.max_gpu_ms);
          },
          "4000, or less so that (max-vms - 1) * (turn-ms + max-gpu-ms) <= 9000 (the driver's fence wait is 10 s)"),
      row(VGPU_OPT_SLICE_BLOCKS, "auto|N",
          [](CommandLine& cl, const std::string& v) {
            return set_row(VGPU_OPT_SLICE_BLOCKS, v, cl.config.slice_blocks);
          }),
      row(VGPU_OPT_WATCHDOG_MS, "MS",
          [](CommandLine& cl, const std::string& v) {
            return set_row(VGPU_OPT_WATCHDOG_MS, v, cl.config.watchdog_ms);
          }),
      row(VGPU_OPT_RING_AHEAD, "on|off",
          [](CommandLine& cl, const std::string& v) { return set_row(VGPU_OPT_RING_AHEAD, v, cl.config.ring_ahead); }),
      row(VGPU_OPT_BACKEND, "NAME", set_backend),
      row(VGPU_OPT_WORKER_DEVICE, "NAME",
          [](CommandLine& cl, const std::string& v) -> Status {
            if (Status s = set_row(VGPU_OPT_WORKER_DEVICE, v, cl.config.worker_device); !s) return s;
            cl.worker_given = true;
            return {};
          }),
      row(
          VGPU_OPT_WORKER_BINARY, "PATH",
          [](CommandLine& cl, const std::string& v) -> Status {
            if (Status s = set_path("--worker-binary", v, cl.config.worker_binary); !s) return s;
            cl.worker_given = true;
            return {};
          },
          "beside vgpud, else " VGPU_WORKER_DEFAULT),
      {"--group", "GROUP", "the daemon's group", "a group name or id",
       "The sockets' group: its members (QEMU's user) may connect.", set_group},
  };
  return specs;
}

}  // namespace

std::span<const OptionSpec> options() { return table(); }

Result<std::string> find_worker_binary(const std::string& vgpud_path, const std::string& installed) {
  return worker::find_worker_binary(vgpud_path, installed, "--backend cuda", "--worker-binary PATH");
}

Result<uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return fail(Errc::invalid_argument, "empty size");
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno || text[0] == '-')
    return fail(Errc::invalid_argument, "'" + text + "' is not a size");
  uint64_t unit = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k")
    unit = KiB;
  else if (suffix == "M" || suffix == "m")
    unit = MiB;
  else if (suffix == "G" || suffix == "g")
    unit = GiB;
  else if (!suffix.empty())
    return fail(Errc::invalid_argument, "'" + text + "': unknown suffix '" + suffix + "' (K, M, G)");
  if (n > ~uint64_t{0} / unit) return fail(Errc::invalid_argument, "'" + text + "' is too large");
  const uint64_t bytes = n * unit;
  if (bytes == 0 || bytes % MiB) {
    // A bare number is bytes: say so, since "--vram 1024" most likely meant MiB.
    const std::string hint = suffix.empty() ? " (a bare number is bytes: " + text + "M for MiB)" : "";
    return fail(Errc::invalid_argument, "'" + text + "' is not a whole, non-zero number of MiB" + hint);
  }
  return bytes;
}

namespace {

// CLI11 for the syntax (--opt value, --opt=value, unknown options and
// missing values named); the table's functions for the values.
Status parse_syntax(const std::vector<std::string>& args, CommandLine& cl) {
  CLI::App app("vgpud");
  app.set_help_flag();
  app.allow_windows_style_options(false);
  app.add_flag("-h,--help", cl.help);
  app.add_flag("--version", cl.version);
  app.add_flag("--man", cl.man);
  Status first_error;
  for (const OptionSpec& o : options()) {
    app.add_option_function<std::string>(
           o.name,
           [&cl, &o, &first_error](const std::string& v) {
             if (Status s = o.apply(cl, v); !s && first_error) first_error = s;
           },
           o.help)
        ->type_name(o.value);
  }
  // An unknown option named as such (CLI11 would list every argument it
  // did not take).
  for (const std::string& a : args) {
    if (a.rfind("--", 0) != 0) continue;
    const std::string name = a.substr(0, a.find('='));
    if (!app.get_option_no_throw(name))
      return fail(Errc::invalid_argument, "unknown option '" + name + "' (see --help)");
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return fail(Errc::invalid_argument, std::string(e.what()) + " (see --help)");
  }
  return first_error;
}

}  // namespace

Result<CommandLine> parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  if (Status s = parse_syntax(args, cl); !s) return std::unexpected(s.error());
  if (cl.help || cl.version || cl.man) return cl;
  if (cl.config.socket.empty()) {
    cl.config.socket = default_socket();
    cl.default_socket = true;
  }
  if (cl.worker_given && cl.config.engine_backend != gpu::EngineBackend::worker)
    return fail(Errc::invalid_argument, "--worker-device and --worker-binary go with --backend cuda");
  if (!cl.max_gpu_ms_given) cl.config.max_gpu_ms = default_max_gpu_ms(cl.config.max_vms, cl.config.turn_ms);
  const uint64_t host_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                              static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (cl.config.vram_bytes > host_bytes)
    return fail(Errc::invalid_argument, strfmt("--vram: %llu MiB is more than this host's %llu MiB of memory",
                                               static_cast<unsigned long long>(cl.config.vram_bytes / MiB),
                                               static_cast<unsigned long long>(host_bytes / MiB)));
  return cl;
}

}  // namespace vgpu::vgpud
