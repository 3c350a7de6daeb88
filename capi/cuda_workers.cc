// SPDX-License-Identifier: GPL-2.0-or-later
// backend=cuda in QEMU's own device (mode fv, embedded mediator): the
// engines' device is one vgpu-worker process for this vGPU, as vgpud's
// --backend cuda gives one per VM (docs/cuda-worker.md, "QEMU's embedded
// device"). QEMU's process never calls CUDA.
//
// A worker that dies is restarted lazily, at the vGPU's next command:
// QEMU has no main loop of ours to call respawn_ended() from, and the
// vGPU's job that meets the dead worker must hear of it (its channel gets
// kernel_error with the reason) before the next one runs on a new worker
// (WorkerGpuDevice::ready maps the partition again when the pid changed).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "capi/backend.h"
#include "common/text.h"
#include "vgpu/option_table.h"
#include "worker/find_binary.h"
#include "worker/gpu_device.h"

namespace vgpu::capi {
namespace {

// The executable this code is in (the C API is a static library: QEMU's
// own, or the test's in a build tree). /proc/self/exe, not dladdr: the
// main program's dladdr name is its argv[0], which has no directory when
// QEMU was found on PATH.
std::string own_file() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : ".";
}

std::string text_or(const char* s, const char* fallback) { return s != nullptr && *s != '\0' ? s : fallback; }

// An absolute path: QEMU -daemonize changes to / before a worker may be
// restarted.
std::string absolute(const std::string& path) {
  char* r = realpath(path.c_str(), nullptr);
  std::string out = r != nullptr ? r : path;
  std::free(r);
  return out;
}

[[nodiscard]] Result<std::string> worker_binary(const VgpuBackendConfig& c) {
  const std::string given = text_or(c.worker_binary, "");
  if (given.empty()) {
    auto found = worker::find_worker_binary(own_file(), VGPU_WORKER_DEFAULT, strfmt("%s=cuda", VGPU_OPT_BACKEND),
                                            strfmt("%s=PATH", VGPU_OPT_WORKER_BINARY));
    if (!found) return found;
    return absolute(*found);
  }
  if (access(given.c_str(), X_OK) != 0)
    return fail(Errc::invalid_argument, strfmt("%s: %s: %s (the vgpu-worker executable)", VGPU_OPT_WORKER_BINARY,
                                               given.c_str(), std::strerror(errno)));
  return absolute(given);
}

}  // namespace

Status set_cuda_workers(const VgpuBackendConfig& c, BackendConfig& config) {
  const std::string device = text_or(c.worker_device, VGPU_OPT_WORKER_DEVICE_DEFAULT);
  if (config.host.engine_backend != gpu::EngineBackend::cuda || !config.socket.empty()) {
    if (device != VGPU_OPT_WORKER_DEVICE_DEFAULT || !text_or(c.worker_binary, "").empty())
      return fail(Errc::invalid_argument,
                  strfmt("%s, %s: only with %s=cuda in QEMU's own device (a worker process per vGPU)",
                         VGPU_OPT_WORKER_DEVICE, VGPU_OPT_WORKER_BINARY, VGPU_OPT_BACKEND));
    return {};
  }
  uint64_t unused = 0;
  char err[256] = "";
  if (!vgpu_option_parse(vgpu_option_find(VGPU_OPT_WORKER_DEVICE), device.c_str(), &unused, err, sizeof err))
    return fail(Errc::invalid_argument, err);  // the table's message, as vgpud's --worker-device
  auto binary = worker_binary(c);
  if (!binary) return std::unexpected(binary.error());
  worker::WorkerOptions o;
  o.binary = *binary;
  o.device = device;
  // Every wait on the worker is bounded by max-gpu-ms (0: a day), as vgpud's.
  const auto deadline = config.host.max_gpu_ms != 0
                            ? std::chrono::nanoseconds(std::chrono::milliseconds(config.host.max_gpu_ms))
                            : std::chrono::nanoseconds(std::chrono::hours(24));
  auto slot = std::make_shared<WorkerSlot>();
  config.workers = slot;
  config.host.engine_backend = gpu::EngineBackend::worker;
  config.host.device_factory = [o, deadline, slot](gpu::Vram& vram) -> Result<std::unique_ptr<gpu::Device>> {
    auto dev = std::make_unique<worker::WorkerGpuDevice>(
        vram, [o](uint32_t) { return o; }, deadline);
    slot->device.store(dev.get(), std::memory_order_release);
    return std::unique_ptr<gpu::Device>(std::move(dev));
  };
  return {};
}

nlohmann::ordered_json worker_json(const WorkerSlot* slot, uint32_t vm_id) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const worker::WorkerGpuDevice* dev = slot ? slot->device.load(std::memory_order_acquire) : nullptr;
  if (dev == nullptr) return j;
  auto info = dev->info(vm_id);
  if (!info) return j;
  j = {{"pid", info->pid},
       {"state", worker::state_name(info->state)},
       {"restarts", info->restarts},
       {"device", info->device},
       {"last_failure", info->last_failure}};
  return j;
}

}  // namespace vgpu::capi
