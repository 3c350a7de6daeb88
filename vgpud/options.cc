// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/options.h"

#include <grp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>

#include "common/text.h"
#include "gpu/device/backend.h"
#include "scheduler/policy.h"

namespace vgpu::vgpud {
namespace {

constexpr const char* VGPU_OPT_TURN_MS_FLAG = "--" VGPU_OPT_TURN_MS;
constexpr const char* VGPU_OPT_MAX_GPU_MS_FLAG = "--" VGPU_OPT_MAX_GPU_MS;
constexpr const char* VGPU_OPT_SLICE_BLOCKS_FLAG = "--" VGPU_OPT_SLICE_BLOCKS;
constexpr const char* VGPU_OPT_RING_AHEAD_FLAG = "--" VGPU_OPT_RING_AHEAD;
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

Status set_scheduler(CommandLine& cl, const std::string& v) {
  if (!sched::policy_known(v))
    return fail(Errc::invalid_argument, "--scheduler: '" + v + "' is not one of " + sched::policy_names());
  cl.config.scheduler = v;
  return {};
}

Status set_yield(CommandLine& cl, const std::string& v) {
  uint32_t us = 0;
  if (Status s = set_count("--yield-us", v, 1, MAX_YIELD_US, us); !s) return s;
  cl.config.sched_params.yield_window_ns = uint64_t{us} * 1000;
  return {};
}

Status set_ring_ahead(CommandLine& cl, const std::string& v) {
  if (v != "on" && v != "off")
    return fail(Errc::invalid_argument, std::string(VGPU_OPT_RING_AHEAD_FLAG) + ": '" + v + "' is not on or off");
  cl.config.ring_ahead = v == "on";
  return {};
}

Status set_backend(CommandLine& cl, const std::string& v) {
  auto b = gpu::parse_engine_backend(v);
  if (!b) return fail(Errc::invalid_argument, "--backend: '" + v + "' is not one of model, cuda, fake_device");
  cl.config.engine_backend = *b;
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

const OptionSpec TABLE[] = {
    {"--socket", "PATH", "$VGPUD_SOCKET, else /run/vgpud/vgpud.sock", "",
     "Where VMs connect (-device vgpu,mode=fv,socket=PATH): a Unix socket, created mode 0660.",
     [](CommandLine& cl, const std::string& v) -> Status {
       if (v.empty()) return fail(Errc::invalid_argument, "--socket: empty path");
       cl.config.socket = v;
       return {};
     }},
    {"--control", "PATH", "the socket's path + .ctl", "", "vgpuctl's socket.",
     [](CommandLine& cl, const std::string& v) -> Status {
       if (v.empty()) return fail(Errc::invalid_argument, "--control: empty path");
       cl.config.control_socket = v;
       return {};
     }},
    {"--vram", "SIZE", "4G", "whole MiB, at most the host's memory",
     "The GPU's VRAM, the part reserved for the daemon included; a number of bytes or one with a K, M or G suffix.",
     set_vram},
    {"--scheduler", "NAME", VGPU_OPT_SCHEDULER_DEFAULT, "band, fifo, credit",
     "The scheduler shared by every VM (docs/scheduler.md).", set_scheduler},
    {"--max-vms", "N", "8", "1..64", "VMs served at once; each slot reserves 24 MiB of VRAM for the daemon's shadows.",
     [](CommandLine& cl, const std::string& v) { return set_count("--max-vms", v, 1, MAX_VMS, cl.config.max_vms); }},
    {"--yield-us", "US", "500", "1..1000000", "BAND's yield window in microseconds (Gdev's; docs/scheduler.md).",
     set_yield},
    {VGPU_OPT_TURN_MS_FLAG, "MS", "30", "0..1000",
     "A scheduler turn's slice in milliseconds: a turn ends at the next GPFIFO entry after it; 0: a turn runs up to "
     "GP_PUT.",
     [](CommandLine& cl, const std::string& v) {
       return set_count(VGPU_OPT_TURN_MS_FLAG, v, 0, VGPU_OPT_TURN_MS_MAX, cl.config.turn_ms);
     }},
    {VGPU_OPT_MAX_GPU_MS_FLAG, "MS", "4000, or less so that (max-vms - 1) * (turn-ms + max-gpu-ms) <= 9000", "0..60000",
     "The longest one indivisible piece of work (a method, or one piece of sliced work) may hold the GPU, in "
     "milliseconds; longer ends with channel error timeout; 0: no limit. The default keeps other VMs' work from pushing a fence wait past the driver's 10 s.",
     [](CommandLine& cl, const std::string& v) {
       cl.max_gpu_ms_given = true;
       return set_count(VGPU_OPT_MAX_GPU_MS_FLAG, v, 0, VGPU_OPT_MAX_GPU_MS_MAX, cl.config.max_gpu_ms);
     }},
    {VGPU_OPT_SLICE_BLOCKS_FLAG, "auto|N", "auto", "auto, 0..16777215",
     "Every VM's launches and copies run in pieces a turn may end between: auto, pieces of turn-ms/4 of GPU time; "
     "N, compute launches in slices of N thread blocks; 0, whole (docs/scheduler.md).",
     [](CommandLine& cl, const std::string& v) -> Status {
       if (v == "auto") {
         cl.config.slice_blocks = VGPU_OPT_SLICE_BLOCKS_AUTO;
         return {};
       }
       return set_count(VGPU_OPT_SLICE_BLOCKS_FLAG, v, 0, VGPU_OPT_SLICE_BLOCKS_MAX, cl.config.slice_blocks);
     }},
    {VGPU_OPT_RING_AHEAD_FLAG, "on|off", "on", "on, off",
     "A VM's next GPFIFO entry is rung behind the one on the GPU while its turn has time and no other VM waits; off: "
     "another VM waits behind at most one entry of a turn, not two.",
     set_ring_ahead},
    {"--backend", "NAME", "model", "model, cuda, fake_device",
     "Who runs the engines' work: the software model, an NVIDIA GPU through CUDA (where built; docs/cuda.md), or the "
     "device path for tests.",
     set_backend},
    {"--group", "GROUP", "the daemon's group", "a group name or id",
     "The sockets' group: its members (QEMU's user) may connect.", set_group},
};

}  // namespace

const std::span<const OptionSpec> OPTIONS(TABLE);

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
  for (const OptionSpec& o : OPTIONS) {
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
