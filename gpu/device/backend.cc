// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/device/backend.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "gpu/device/fake_device.h"

namespace vgpu::gpu {

namespace {

constexpr EnumName<EngineBackend> BACKENDS[] = {
    {EngineBackend::model, "model"},
    {EngineBackend::cuda, "cuda"},
    {EngineBackend::fake_device, "fake_device"},
    {EngineBackend::worker, "worker"},
};

}  // namespace

std::optional<EngineBackend> parse_engine_backend(std::string_view name) { return value_named(BACKENDS, name); }

const char* engine_backend_name(EngineBackend b) { return name_of(BACKENDS, b); }

Result<EngineBackend> effective_engine_backend(EngineBackend configured) {
  const char* env = std::getenv("VGPU_ENGINE_BACKEND");
  if (configured != EngineBackend::model || env == nullptr || *env == '\0') return configured;
  auto b = parse_engine_backend(env);
  if (!b)
    return fail(Errc::invalid_argument,
                std::string("VGPU_ENGINE_BACKEND: '") + env + "' is not one of model, cuda, fake_device");
  return *b;
}

Result<bool> device_fences_enabled() {
  const char* env = std::getenv("VGPU_DEVICE_FENCES");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "on") return true;
  if (std::string_view(env) == "off") return false;
  return fail(Errc::invalid_argument, std::string("VGPU_DEVICE_FENCES: '") + env + "' is neither on nor off");
}

Result<std::unique_ptr<Device>> make_device(EngineBackend b, Vram& vram) {
  switch (b) {
    case EngineBackend::model: return std::unique_ptr<Device>();
    case EngineBackend::fake_device: return std::unique_ptr<Device>(new FakeDevice(vram));
    case EngineBackend::cuda: return make_cuda_device(vram);
    case EngineBackend::worker:
      return fail(Errc::unsupported, "engine back end worker: only the mediator starts it (a worker process per VM)");
  }
  return fail(Errc::invalid_argument, "unknown engine back end");
}

}  // namespace vgpu::gpu
