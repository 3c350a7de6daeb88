// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-worker: one VM's CUDA worker (docs/cuda-worker.md). Started by the
// mediator's WorkerHost with the shared region at descriptor SHM_FD and
// its doorbell (an eventfd) at BELL_FD; not meant to be run by hand.
//   vgpu-worker --device cuda|fake [--parent PID] [--die-at-seq N]
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "worker/device.h"
#include "worker/worker_loop.h"

using namespace vgpu::worker;

namespace {

int usage(const char* why) {
  fprintf(stderr, "vgpu-worker: %s\nusage: vgpu-worker --device cuda|fake [--parent PID] [--die-at-seq N]\n", why);
  return EXIT_BAD_SETUP;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cuda";
  LoopOptions options;
  pid_t parent = 0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (a == "--parent" && i + 1 < argc) {
      parent = static_cast<pid_t>(strtol(argv[++i], nullptr, 10));
    } else if (a == "--die-at-seq" && i + 1 < argc) {
      options.die_at_seq = static_cast<uint32_t>(strtoul(argv[++i], nullptr, 10));
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (device != "cuda" && device != "fake") return usage(("unknown device '" + device + "'").c_str());
  if (options.die_at_seq != 0 && device != "fake") return usage("--die-at-seq is a test of the fake device");
  if (parent > 0) {
    // The starter's pidfd, watched while idle; a starter already gone
    // (or a pid reused by another process) ends the worker now.
    options.parent_fd = static_cast<int>(syscall(SYS_pidfd_open, parent, 0));
    if (options.parent_fd < 0 || getppid() != parent) return 0;
  }
  auto shared = Shared::attach(SHM_FD);
  if (!shared) return usage(shared.error().what().c_str());
  Region& r = (*shared)->region();
  r.header.pid.store(static_cast<uint32_t>(getpid()));
  std::unique_ptr<WorkerDevice> dev;
  if (device == "fake") {
    dev = make_fake_device();
  } else {
    auto d = make_cuda_device(r);
    if (!d) {
      snprintf(r.header.error.message, sizeof r.header.error.message, "%s", d.error().what().c_str());
      r.header.error.set.store(1, std::memory_order_release);
      r.header.state.store(static_cast<uint32_t>(WorkerState::failed));
      return EXIT_DEVICE_ERROR;
    }
    dev = std::move(*d);
  }
  snprintf(r.header.device_name, sizeof r.header.device_name, "%s", dev->name().c_str());
  int rc = run_loop(r, BELL_FD, *dev, options);
  // A failed context is not torn down: the process's exit releases it.
  if (rc != 0) _exit(rc);
  return rc;
}
