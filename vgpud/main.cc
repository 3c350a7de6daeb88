// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud: the host daemon (daemon.h; options in options.cc; docs/vgpud.md).
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "vgpud/daemon.h"
#include "vgpud/options.h"

namespace {

// Exit statuses (vgpud(8)).
constexpr int EXIT_CANNOT_START = 1;
constexpr int EXIT_USAGE = 2;

// SIGTERM and SIGINT reach the main loop as one byte (the signal number)
// on a pipe. A handler, not a blocked mask and a signalfd: libraries start
// threads before main (OpenBLAS), and a signal delivered to one of those
// would take the default action.
int signal_pipe[2] = {-1, -1};

void on_stop_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  (void)!write(signal_pipe[1], &b, 1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu::vgpud;
  auto cl = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  if (!cl) {
    std::fprintf(stderr, "vgpud: %s\n", cl.error().message.c_str());
    return EXIT_USAGE;
  }
  if (cl->help || cl->version || cl->man) {
    std::fputs((cl->help ? usage() : cl->version ? version_text() : man_page()).c_str(), stdout);
    return 0;
  }
  std::signal(SIGPIPE, SIG_IGN);
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("vgpud: pipe");
    return EXIT_CANNOT_START;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  auto daemon = Daemon::create(cl->config);
  if (!daemon) {
    // A default the operator did not choose: say where it came from.
    const char* hint = !cl->default_socket       ? ""
                       : std::getenv(SOCKET_ENV) ? " (the socket from $VGPUD_SOCKET)"
                                                 : " (the default socket; give --socket PATH or set VGPUD_SOCKET)";
    std::fprintf(stderr, "vgpud: %s%s\n", daemon.error().message.c_str(), hint);
    return EXIT_CANNOT_START;
  }
  (*daemon)->run(signal_pipe[0]);
  daemon->reset();
  log_line("stopped");
  return 0;
}
