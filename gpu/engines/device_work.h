// SPDX-License-Identifier: GPL-2.0-or-later
// The copy and compute engines' work on a Device instead of host views
// (docs/cuda.md, "Engine work on the device"): buffers are translated into
// physical runs, made valid on the device through the residency tracker,
// used in place when contiguous and gathered/scattered otherwise, and the
// channel's stream is synchronized before the work completes.
#pragma once

#include <cstdint>
#include <optional>

#include "gpu/device/device.h"
#include "gpu/device/residency.h"
#include "gpu/engines/class_object.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/engines/pitch_copy.h"
#include "gpu/engines/placement_cache.h"
#include "gpu/engines/user_device.h"

namespace vgpu::gpu {

struct DeviceEngines {
  DeviceEngines(Device& d, ResidencyTracker& r, bool f = true) : device(d), residency(r), fences(f) {}
  Device& device;
  ResidencyTracker& residency;
  // The device writes the fence after engine work (FollowingRelease).
  bool fences;
  PlacementCache placements;  // shared by every channel's work
  ApertureCache apertures;    // user launches' compute apertures (user_device.h)
};

// A buffer scattered over more physical runs than this is bad_argument
// (the host memory a launch uses stays bounded whatever the page tables).
inline constexpr size_t MAX_DEVICE_RUNS = size_t{1} << 20;

// The launch, or the copy's data movement, on the device; faults and
// device failures as channel faults. None: the caller runs it on the
// model's engines, on host-valid pages, and nothing was done on the device:
// a launch any of whose buffers touches system memory, or a copy that
// device_dma.h does not move straight (docs/cuda.md, "System memory").
[[nodiscard]] std::optional<MethodDone> run_kernel_on_device(ChannelContext& ctx, const KernelLaunch& launch,
                                                             uint32_t mthd);
// The channel's error after a failed synchronize of its stream: the
// device's own account where it has one (Device::failure), else internal.
std::unexpected<ChannelFault> device_channel_fault(const Device& dev, Device::Stream stream, uint32_t mthd);
[[nodiscard]] std::optional<MethodDone> pitch_copy_on_device(ChannelContext& ctx, const PitchCopy& copy, uint32_t mthd);

}  // namespace vgpu::gpu
