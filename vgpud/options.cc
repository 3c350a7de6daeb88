// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/options.h"

#include <grp.h>
#include <unistd.h>

#include <cstdlib>

#include "common/text.h"
#include "gpu/device/backend.h"
#include "scheduler/policy.h"

namespace vgpu::vgpud {

constexpr const char* VGPU_OPT_TURN_MS_FLAG = "--" VGPU_OPT_TURN_MS;
constexpr const char* VGPU_OPT_MAX_GPU_MS_FLAG = "--" VGPU_OPT_MAX_GPU_MS;
constexpr const char* VGPU_OPT_SLICE_BLOCKS_FLAG = "--" VGPU_OPT_SLICE_BLOCKS;
constexpr const char* VGPU_OPT_RING_AHEAD_FLAG = "--" VGPU_OPT_RING_AHEAD;

const char* const USAGE =
    "usage: vgpud --socket PATH [--vram SIZE] [--scheduler fifo|credit|band] [--max-vms N]\n"
    "             [--turn-ms MS] [--max-gpu-ms MS] [--slice-blocks N] [--ring-ahead on|off]\n"
    "             [--backend model|cuda] [--group GROUP] [--control PATH]\n"
    "\n"
    "The vgpu host daemon: owns the GPU, the mediator and the scheduler, and serves one\n"
    "vGPU to each QEMU (-device vgpu,mode=fv,socket=PATH) or test client that connects.\n"
    "Runs in the foreground, logs to stderr, stops cleanly on SIGTERM or SIGINT.\n"
    "\n"
    "  --socket PATH     where VMs connect (a Unix socket, created mode 0660)\n"
    "  --vram SIZE       the GPU's VRAM, reserved part included (default 4G; K, M, G suffixes)\n"
    "  --scheduler NAME  band (default), fifo or credit\n"
    "  --max-vms N       VMs served at once (default 8, 1..64); each reserves 24 MiB for shadows\n"
    "  --yield-us US     BAND's yield window (default 500, Gdev's; docs/scheduler.md)\n"
    "  --turn-ms MS      a scheduler turn's slice: it ends at the next GPFIFO entry after it\n"
    "                    (default 30, 0..1000; 0: a turn runs up to GP_PUT)\n"
    "  --max-gpu-ms MS   the longest one GPFIFO entry may hold the GPU; longer ends with\n"
    "                    channel error timeout (0..60000; 0: no limit). Default: 4000, or\n"
    "                    less so that (max-vms - 1) * (turn-ms + max-gpu-ms) <= 9000: other\n"
    "                    VMs' work never pushes a fence wait past the driver's 10 s\n"
    "  --slice-blocks auto|N  every VM's launches and copies run in pieces a turn may end\n"
    "                    between: auto (default), pieces of turn-ms/4 of GPU time; N, compute\n"
    "                    launches in slices of N thread blocks; 0, whole (docs/scheduler.md)\n"
    "  --ring-ahead on|off  a VM's next GPFIFO entry is rung behind the one on the GPU while\n"
    "                    its turn has time and no other VM waits (default on); off: another\n"
    "                    VM waits behind at most one entry of a turn, not two\n"
    "  --backend NAME    who runs the engines' work: model (default), cuda (an NVIDIA GPU,\n"
    "                    where built; docs/cuda.md) or fake_device (the device path, tests)\n"
    "  --group GROUP     the sockets' group (name or id): its members may connect\n"
    "  --control PATH    vgpuctl's socket (default: the socket's path + .ctl)\n"
    "  --help            this text\n";

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
  if (bytes == 0 || bytes % MiB)
    return fail(Errc::invalid_argument, "'" + text + "' is not a whole, non-zero number of MiB");
  return bytes;
}

namespace {

Result<uint32_t> parse_count(const std::string& opt, const std::string& text, uint32_t lo, uint32_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < lo || v > hi)
    return fail(Errc::invalid_argument,
                strfmt("%s: '%s' is not a number in [%u, %u]", opt.c_str(), text.c_str(), lo, hi));
  return static_cast<uint32_t>(v);
}

Result<gid_t> parse_group(const std::string& text) {
  if (group* g = getgrnam(text.c_str())) return g->gr_gid;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && !*end && v >= 0) return static_cast<gid_t>(v);
  return fail(Errc::invalid_argument, "--group: no group '" + text + "'");
}

}  // namespace

Result<CommandLine> parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  bool max_gpu_ms_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      cl.help = true;
      return cl;
    }
    if (a.rfind("--", 0) != 0) return fail(Errc::invalid_argument, "unexpected argument '" + a + "'");
    if (i + 1 >= args.size()) return fail(Errc::invalid_argument, a + ": needs a value");
    const std::string& v = args[++i];
    if (a == "--socket") {
      cl.config.socket = v;
    } else if (a == "--control") {
      cl.config.control_socket = v;
    } else if (a == "--vram") {
      auto b = parse_size(v);
      if (!b) return std::unexpected(b.error().context("--vram"));
      cl.config.vram_bytes = *b;
    } else if (a == "--scheduler") {
      if (!sched::policy_known(v))
        return fail(Errc::invalid_argument, "--scheduler: '" + v + "' is not one of " + sched::policy_names());
      cl.config.scheduler = v;
    } else if (a == "--max-vms") {
      auto n = parse_count(a, v, 1, 64);
      if (!n) return std::unexpected(n.error());
      cl.config.max_vms = *n;
    } else if (a == "--yield-us") {
      auto n = parse_count(a, v, 1, 1'000'000);
      if (!n) return std::unexpected(n.error());
      cl.config.sched_params.yield_window_ns = uint64_t{*n} * 1000;
    } else if (a == VGPU_OPT_TURN_MS_FLAG) {
      auto n = parse_count(a, v, 0, VGPU_OPT_TURN_MS_MAX);
      if (!n) return std::unexpected(n.error());
      cl.config.turn_ms = *n;
    } else if (a == VGPU_OPT_MAX_GPU_MS_FLAG) {
      auto n = parse_count(a, v, 0, VGPU_OPT_MAX_GPU_MS_MAX);
      if (!n) return std::unexpected(n.error());
      cl.config.max_gpu_ms = *n;
      max_gpu_ms_given = true;
    } else if (a == VGPU_OPT_SLICE_BLOCKS_FLAG) {
      auto n = v == "auto" ? Result<uint32_t>(VGPU_OPT_SLICE_BLOCKS_AUTO)
                           : parse_count(a, v, 0, VGPU_OPT_SLICE_BLOCKS_MAX);
      if (!n) return std::unexpected(n.error());
      cl.config.slice_blocks = *n;
    } else if (a == VGPU_OPT_RING_AHEAD_FLAG) {
      if (v != "on" && v != "off") return fail(Errc::invalid_argument, a + ": '" + v + "' is not on or off");
      cl.config.ring_ahead = v == "on";
    } else if (a == "--backend") {
      auto b = gpu::parse_engine_backend(v);
      if (!b) return fail(Errc::invalid_argument, "--backend: '" + v + "' is not one of model, cuda, fake_device");
      cl.config.engine_backend = *b;
    } else if (a == "--group") {
      auto g = parse_group(v);
      if (!g) return std::unexpected(g.error());
      cl.config.group = *g;
    } else {
      return fail(Errc::invalid_argument, "unknown option '" + a + "' (see --help)");
    }
  }
  if (cl.config.socket.empty()) return fail(Errc::invalid_argument, "--socket PATH is required (see --help)");
  if (!max_gpu_ms_given) cl.config.max_gpu_ms = default_max_gpu_ms(cl.config.max_vms, cl.config.turn_ms);
  const uint64_t host_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                              static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (cl.config.vram_bytes > host_bytes)
    return fail(Errc::invalid_argument, strfmt("--vram: %llu MiB is more than this host's %llu MiB of memory",
                                               static_cast<unsigned long long>(cl.config.vram_bytes / MiB),
                                               static_cast<unsigned long long>(host_bytes / MiB)));
  return cl;
}

}  // namespace vgpu::vgpud
