// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud makes no CUDA call of its own: --backend cuda is one worker
// process per VM (docs/cuda-worker.md). These definitions, linked into the
// vgpud executable before the device library, stand for the in-process
// back end's (gpu/device/cuda_device.cc), so the linker takes neither it
// nor the CUDA runtime, cuBLAS and cuDNN into vgpud (vgpud_no_cuda checks
// its dynamic section).
#include "gpu/device/backend.h"

namespace vgpu::gpu {

bool cuda_backend_built() { return false; }

Result<std::unique_ptr<Device>> make_cuda_device(Vram&) {
  return fail(Errc::unsupported, "vgpud runs CUDA in a worker process per VM (--backend cuda), never in its own");
}

}  // namespace vgpu::gpu
