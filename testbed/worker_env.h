// SPDX-License-Identifier: GPL-2.0-or-later
// The testbed's fv VMs on per-VM worker processes (worker/gpu_device.h)
// when the environment asks: VGPU_WORKER_DEVICE=fake|cuda, and
// VGPU_WORKER_BINARY the vgpu-worker to start. So the suites that run
// through the testbed (the CUDA corpus through libcuda, the workloads)
// run on workers unchanged, as VGPU_ENGINE_BACKEND picks the in-process
// back ends.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "gpu/gpu.h"

namespace vgpu::testbed {

// The factory the environment names; an empty one without
// VGPU_WORKER_DEVICE; an error naming the variable that is wrong.
// `max_gpu_ms` bounds every wait for a worker (0: a day).
Result<gpu::DeviceFactory> worker_factory_from_env(uint32_t max_gpu_ms);

}  // namespace vgpu::testbed
