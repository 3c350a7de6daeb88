// SPDX-License-Identifier: GPL-2.0-or-later
// Which worker the worker's tests start: the device from
// VGPU_WORKER_TEST_DEVICE (fake in CI, cuda on a GPU machine) and the
// binary from VGPU_WORKER_TEST_BINARY (the staged vgpu-worker there; here
// the build's, VGPU_WORKER_BIN from meson).
#pragma once
#include <cstdlib>
#include <string>

namespace vgpu::worker::testing {

inline std::string test_device() {
  const char* d = std::getenv("VGPU_WORKER_TEST_DEVICE");
  return d != nullptr && *d != '\0' ? d : "fake";
}

inline std::string test_binary() {
  const char* b = std::getenv("VGPU_WORKER_TEST_BINARY");
  return b != nullptr && *b != '\0' ? b : VGPU_WORKER_BIN;
}

}  // namespace vgpu::worker::testing
