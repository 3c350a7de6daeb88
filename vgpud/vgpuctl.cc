// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl: talking to the daemon (its command line: vgpuctl_main.cc).
//   vgpuctl [--socket PATH] [--timeout S] list | stats [--json] | set-weight VM WEIGHT
//           | workers | watch [--interval S] | plot --seconds S --png FILE
// PATH is the daemon's VM socket (its control socket is PATH.ctl) or the
// control socket itself (a path ending in .ctl); default $VGPUD_SOCKET or
// /run/vgpud/vgpud.sock. Exit status: 0 done, 1 the daemon refused or
// could not be reached, 2 a usage error.
#include <poll.h>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/text.h"
#include "vgpud/protocol.h"
#include "vgpud/vgpuctl.h"
#include "vgpud/wire.h"

namespace vgpu::vgpuctl {

using vgpud::UniqueFd;

namespace {

constexpr size_t MAX_ANSWER = 16u << 20;

}  // namespace

std::string control_path(const std::string& socket) {
  const std::string ext = ".ctl";
  if (socket.size() > ext.size() && socket.compare(socket.size() - ext.size(), ext.size(), ext) == 0) return socket;
  return socket + ext;
}

namespace {

// All the peer sends until it closes, within the deadline.
Result<std::string> read_all(int fd, const Target& t) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(t.timeout_ms);
  std::string out;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0)
      return fail(Errc::timeout, vgpud::no_answer(t.control, t.timeout_ms));
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io_error, t.control + ": " + std::strerror(errno));
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    // Another program: said at once, not after it closes or the time is up.
    const std::string ours = std::string(vgpud::proto::CONTROL_HELLO) + " ";
    const size_t seen = std::min(out.size(), ours.size());
    if (out.compare(0, seen, ours, 0, seen) != 0 || out.size() > MAX_ANSWER)
      return fail(Errc::unsupported, vgpud::not_vgpud(t.control));
  }
}

}  // namespace

Result<std::string> ask(const Target& t, const std::string& line) {
  auto fd = vgpud::connect_unix(t.control, static_cast<int>(t.timeout_ms));
  if (!fd) return std::unexpected(fd.error());
  const std::string req = line + "\n";
  if (Status s = vgpud::send_all(fd->get(), std::as_bytes(std::span(req.data(), req.size()))); !s)
    return fail(Errc::io_error, t.control + " closed the connection without answering");
  auto all = read_all(fd->get(), t);
  if (!all) return all;
  if (all->empty()) return fail(Errc::io_error, t.control + " closed the connection without answering");
  const std::string hello = strfmt("%s %u\n", vgpud::proto::CONTROL_HELLO, vgpud::proto::CONTROL_VERSION);
  if (all->rfind(hello, 0) != 0) {
    const std::string ours = std::string(vgpud::proto::CONTROL_HELLO) + " ";
    if (all->rfind(ours, 0) == 0)
      return fail(Errc::unsupported, "vgpud at " + t.control + " speaks control protocol version " +
                                         all->substr(ours.size(), all->find('\n') - ours.size()) + ", vgpuctl " +
                                         std::to_string(vgpud::proto::CONTROL_VERSION));
    return fail(Errc::unsupported, vgpud::not_vgpud(t.control));
  }
  return all->substr(hello.size());
}

Result<vgpud::share_plot::Sample> shares(const Target& t) {
  auto r = ask(t, "shares");
  if (!r) return std::unexpected(r.error());
  auto s = vgpud::share_plot::parse_shares(*r);
  if (!s) return fail(Errc::unsupported, "vgpud at " + t.control + ": a malformed shares answer");
  return std::move(*s);
}

// The daemon's answer on stdout; an "error:" answer on stderr, exit 1.
int answer(const Result<std::string>& r, bool json) {
  if (!r) {
    std::fprintf(stderr, "vgpuctl: %s\n", r.error().message.c_str());
    return EXIT_FAILED;
  }
  if (r->rfind("error: ", 0) == 0) {
    std::fprintf(stderr, "vgpuctl: %s", r->substr(7).c_str());
    return EXIT_FAILED;
  }
  if (json && !nlohmann::json::accept(*r)) {
    std::fprintf(stderr, "vgpuctl: the daemon's stats are not JSON\n");
    return EXIT_FAILED;
  }
  std::fputs(r->c_str(), stdout);
  return 0;
}

int watch(const Target& t, double interval) {
  for (;;) {
    auto r = ask(t, "list");
    if (!r || r->rfind("error: ", 0) == 0) return answer(r);
    std::printf("\033[H\033[2J%s", r->c_str());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

}  // namespace vgpu::vgpuctl
