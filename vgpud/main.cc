// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud: the host daemon (daemon.h; usage in options.cc; docs/vgpud.md).
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "vgpud/daemon.h"
#include "vgpud/options.h"

namespace {

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
  std::signal(SIGPIPE, SIG_IGN);
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("vgpud: pipe");
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  auto cl = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  if (!cl) {
    std::fprintf(stderr, "vgpud: %s\n", cl.error().message.c_str());
    return 2;
  }
  if (cl->help) {
    std::fputs(USAGE, stdout);
    return 0;
  }
  auto daemon = Daemon::create(cl->config);
  if (!daemon) {
    std::fprintf(stderr, "vgpud: %s\n", daemon.error().message.c_str());
    return 1;
  }
  (*daemon)->run(signal_pipe[0]);
  daemon->reset();
  std::fprintf(stderr, "vgpud: stopped\n");
  return 0;
}
