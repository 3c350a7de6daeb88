// SPDX-License-Identifier: GPL-2.0-or-later
// Choosing the engine back end (docs/cuda.md): names, and the Device each
// one needs (none for the model's own engines).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "common/error.h"
#include "gpu/device/device.h"
#include "gpu/gpu.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

// "model", "cuda", "fake_device".
[[nodiscard]] std::optional<EngineBackend> parse_engine_backend(std::string_view name);
const char* engine_backend_name(EngineBackend b);
// The backend to use: `configured`, or what VGPU_ENGINE_BACKEND names when
// `configured` is model and the variable is set. An unknown name fails.
[[nodiscard]] Result<EngineBackend> effective_engine_backend(EngineBackend configured);
// Whether a device back end writes the fence after engine work itself
// (docs/cuda.md, "Fences"): on unless VGPU_DEVICE_FENCES is off, for
// comparisons and as a way out; any other value than on or off fails.
[[nodiscard]] Result<bool> device_fences_enabled();

// Was this binary built with the cuda back end?
bool cuda_backend_built();

// The device of a back end over `vram`; nullptr for model. cuda fails
// with a message when it was not built or no GPU can be used.
[[nodiscard]] Result<std::unique_ptr<Device>> make_device(EngineBackend b, Vram& vram);

// Defined by cuda_device.cc, or by cuda_absent.cc where CUDA was not found.
[[nodiscard]] Result<std::unique_ptr<Device>> make_cuda_device(Vram& vram);

}  // namespace vgpu::gpu
