// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl: the daemon's control tool (docs/vgpud.md).
//   vgpuctl --socket PATH list | stats --json | set-weight VM W | watch [--interval S]
//           | plot --seconds S --png FILE
// PATH is the daemon's VM socket (its control socket is PATH.ctl) or the
// control socket itself (a path ending in .ctl).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "vgpud/share_plot.h"
#include "vgpud/wire.h"

namespace {

using namespace vgpu;
using namespace vgpu::vgpud;

const char* const USAGE =
    "usage: vgpuctl --socket PATH COMMAND\n"
    "  list                       one row per VM: name, pid, uid, VRAM, channels, weight,\n"
    "                             GPU share over 1 s and 10 s, busy time, trapped accesses,\n"
    "                             doorbells, faults\n"
    "  stats --json               the same and every counter, as JSON\n"
    "  set-weight VM W            the VM's scheduler weight (1..100), at once\n"
    "  watch [--interval S]       list, refreshed every S seconds (default 1) until interrupted\n"
    "  plot --seconds S --png F   sample each VM's GPU time for S seconds and plot its share\n"
    "                             (over 2 s, per 250 ms window) and its weight's target to F\n"
    "                             with gnuplot (data in F.dat)\n";

std::string control_path(const std::string& socket) {
  const std::string ext = ".ctl";
  if (socket.size() > ext.size() && socket.compare(socket.size() - ext.size(), ext.size(), ext) == 0) return socket;
  return socket + ext;
}

Result<std::string> ask(const std::string& socket, const std::string& line) {
  auto fd = connect_unix(control_path(socket));
  if (!fd) return std::unexpected(fd.error());
  const std::string req = line + "\n";
  if (Status s = send_all(fd->get(), std::as_bytes(std::span(req.data(), req.size()))); !s)
    return std::unexpected(s.error());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd->get(), buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

int answer(const Result<std::string>& r) {
  if (!r) {
    std::fprintf(stderr, "vgpuctl: %s\n", r.error().message.c_str());
    return 1;
  }
  std::fputs(r->c_str(), stdout);
  return r->rfind("error:", 0) == 0 ? 1 : 0;
}

int plot(const std::string& socket, double seconds, const std::string& png) {
  constexpr auto WINDOW = std::chrono::milliseconds(250);
  constexpr size_t ROLLING_WINDOWS = 8;  // the line: the share over the last 2 s
  std::vector<share_plot::Sample> samples;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto next = std::chrono::steady_clock::now();
  while (next <= end) {
    auto r = ask(socket, "shares");
    auto s = r ? share_plot::parse_shares(*r) : std::nullopt;
    if (!s) {
      std::fprintf(stderr, "vgpuctl: cannot read shares from the daemon at %s%s%s\n", control_path(socket).c_str(),
                   r ? "" : ": ", r ? "" : r.error().message.c_str());
      return 1;
    }
    samples.push_back(std::move(*s));
    next += WINDOW;
    std::this_thread::sleep_until(next);
  }
  const share_plot::Figures f = share_plot::reduce(samples, ROLLING_WINDOWS);
  const std::string dat = png + ".dat", gp = png + ".gp";
  std::ofstream(dat) << share_plot::data_file(f);
  std::ofstream(gp) << share_plot::gnuplot_script(f, dat, png, std::chrono::duration<double>(WINDOW).count());
  const std::string cmd = "gnuplot '" + gp + "'";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "vgpuctl: gnuplot failed or is missing; the data is in %s\n", dat.c_str());
    return 1;
  }
  std::printf("%s (%zu samples, scheduler %s", png.c_str(), samples.size(), f.scheduler.c_str());
  for (const share_plot::Series& v : f.vms)
    std::printf(", %s weight %u share %.3f", v.name.c_str(), v.weight, v.run_share);
  std::printf("; data in %s)\n", dat.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string socket;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::fputs(USAGE, stdout);
      return 0;
    }
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket = args[++i];
      continue;
    }
    rest.push_back(args[i]);
  }
  if (socket.empty() || rest.empty()) {
    std::fputs(USAGE, stderr);
    return 2;
  }
  const std::string& cmd = rest[0];
  if (cmd == "list" && rest.size() == 1) return answer(ask(socket, "list"));
  if (cmd == "stats" && rest.size() <= 2 && (rest.size() == 1 || rest[1] == "--json"))
    return answer(ask(socket, "stats"));
  if (cmd == "set-weight" && rest.size() == 3) return answer(ask(socket, "set-weight " + rest[1] + " " + rest[2]));
  if (cmd == "watch") {
    double interval = 1.0;
    if (rest.size() == 3 && rest[1] == "--interval") interval = std::atof(rest[2].c_str());
    if (interval <= 0) interval = 1.0;
    for (;;) {
      auto r = ask(socket, "list");
      if (!r) return answer(r);
      std::printf("\033[H\033[2J%s", r->c_str());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    }
  }
  if (cmd == "plot") {
    double seconds = 0;
    std::string png;
    for (size_t i = 1; i + 1 < rest.size(); i += 2) {
      if (rest[i] == "--seconds")
        seconds = std::atof(rest[i + 1].c_str());
      else if (rest[i] == "--png")
        png = rest[i + 1];
    }
    if (seconds <= 0 || png.empty()) {
      std::fputs("vgpuctl: plot needs --seconds S (> 0) and --png FILE\n", stderr);
      return 2;
    }
    return plot(socket, seconds, png);
  }
  std::fprintf(stderr, "vgpuctl: unknown command '%s'\n%s", cmd.c_str(), USAGE);
  return 2;
}
