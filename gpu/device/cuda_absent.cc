// SPDX-License-Identifier: GPL-2.0-or-later
// The cuda back end where meson did not find CUDA: asking for it is a
// configuration error that says so.
#include "gpu/device/backend.h"

namespace vgpu::gpu {

bool cuda_backend_built() { return false; }

Result<std::unique_ptr<Device>> make_cuda_device(Vram&) {
  return fail(Errc::unsupported,
              "engine back end 'cuda' is not built into this binary (CUDA was not found when it was configured: "
              "meson -Dcuda=enabled with nvcc, cuBLAS and the CUDA runtime installed)");
}

}  // namespace vgpu::gpu
