// SPDX-License-Identifier: GPL-2.0-or-later
// The copy and compute engines' work on a Device instead of host views
// (docs/cuda.md, "Engine work on the device"): buffers are translated into
// physical runs, made valid on the device through the residency tracker,
// used in place when contiguous and gathered/scattered otherwise, and the
// channel's stream is synchronized before the work completes.
#pragma once

#include <cstdint>

#include "gpu/device/device.h"
#include "gpu/device/residency.h"
#include "gpu/engines/class_object.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/engines/pitch_copy.h"

namespace vgpu::gpu {

struct DeviceEngines {
  Device& device;
  ResidencyTracker& residency;
};

// A buffer scattered over more physical runs than this is bad_argument
// (the host memory a launch uses stays bounded whatever the page tables).
inline constexpr size_t MAX_DEVICE_RUNS = size_t{1} << 20;

// Work that touches system memory (DMA to guest RAM) runs on the model's
// engines, on host-valid pages (docs/cuda.md): the device back end moves
// VRAM only.
[[nodiscard]] bool launch_touches_system_memory(ChannelContext& ctx, const KernelLaunch& launch);
[[nodiscard]] bool copy_touches_system_memory(ChannelContext& ctx, const PitchCopy& copy);

[[nodiscard]] MethodDone run_kernel_on_device(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd);
// The copy's data movement; faults and device failures as channel faults.
[[nodiscard]] MethodDone pitch_copy_on_device(ChannelContext& ctx, const PitchCopy& copy, uint32_t mthd);

}  // namespace vgpu::gpu
