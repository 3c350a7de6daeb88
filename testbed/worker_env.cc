// SPDX-License-Identifier: GPL-2.0-or-later
#include "testbed/worker_env.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "worker/gpu_device.h"

namespace vgpu::testbed {

Result<gpu::DeviceFactory> worker_factory_from_env(uint32_t max_gpu_ms) {
  const char* device = std::getenv("VGPU_WORKER_DEVICE");
  if (device == nullptr || *device == '\0') return gpu::DeviceFactory{};
  const std::string d = device;
  if (d != "fake" && d != "cuda")
    return fail(Errc::invalid_argument, "VGPU_WORKER_DEVICE: '" + d + "' is not one of fake, cuda");
  const char* binary = std::getenv("VGPU_WORKER_BINARY");
  if (binary == nullptr || access(binary, X_OK) != 0)
    return fail(Errc::invalid_argument, std::string("VGPU_WORKER_BINARY: '") + (binary ? binary : "") +
                                            "' is not an executable vgpu-worker (VGPU_WORKER_DEVICE needs it)");
  worker::WorkerOptions o;
  o.binary = binary;
  o.device = d;
  const auto deadline = max_gpu_ms != 0 ? std::chrono::nanoseconds(std::chrono::milliseconds(max_gpu_ms))
                                        : std::chrono::nanoseconds(std::chrono::hours(24));
  return gpu::DeviceFactory([o, deadline](gpu::Vram& vram) -> Result<std::unique_ptr<gpu::Device>> {
    return std::unique_ptr<gpu::Device>(std::make_unique<worker::WorkerGpuDevice>(
        vram, [o](uint32_t) { return o; }, deadline));
  });
}

}  // namespace vgpu::testbed
