// SPDX-License-Identifier: GPL-2.0-or-later
// The worker's side of the IPC (docs/cuda-worker.md): takes commands off
// the ring, runs them on its device, queues their fences, and on a device
// error writes the reason to the header and returns EXIT_DEVICE_ERROR.
#pragma once
#include <cstdint>
#include "worker/device.h"
#include "worker/ipc.h"

namespace vgpu::worker {

struct LoopOptions {
  // How long the worker polls the ring after work before it blocks.
  uint64_t idle_poll_ns = 50'000;
  // How long it polls while the device has work in flight (PFIFO's
  // DEVICE_POLL_NS); a worker whose GPU work takes longer sleeps.
  uint64_t device_poll_ns = 2'000'000;
  // Test hook of the fake worker: abort() on the command with this
  // sequence number (0: never), as a crashed worker would.
  uint32_t die_at_seq = 0;
  // A pidfd of the process that started the worker (-1: none): readable
  // once it ended, and then the worker ends too (a QEMU or vgpud killed
  // without stopping it would otherwise leave it holding its GPU memory).
  int parent_fd = -1;
};

// Runs until a `stop` command (returns 0) or a device error.
int run_loop(Region& region, int bell_fd, WorkerDevice& device, const LoopOptions& options);

}  // namespace vgpu::worker
