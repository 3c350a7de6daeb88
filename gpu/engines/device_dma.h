// SPDX-License-Identifier: GPL-2.0-or-later
// System memory DMA on the device (docs/cuda.md, "System memory"): a copy
// between guest RAM and VRAM moves straight between the RAM's registered
// host mapping and the device's VRAM mirror, one host<->device transfer
// per run (one in all when both sides are contiguous).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "gpu/engines/class_object.h"
#include "gpu/engines/pitch_copy.h"
#include "gpu/mem/mmu.h"

namespace vgpu::gpu {

// `src` and `dst` are the copy's extents placed as physical runs (one
// walk, faults already reported), one side touching system memory. None:
// the model's engines run it on host-valid pages, and nothing was done on
// the device: both sides touch system memory, the system memory has no
// host spans (QEMU's DMA API), a run is not in them (the memory went away
// since the walk: the model faults dma_error), or VRAM runs overlap.
[[nodiscard]] std::optional<MethodDone> pitch_copy_sysmem_on_device(ChannelContext& ctx, const PitchCopy& c,
                                                                    std::span<const PhysRun> src,
                                                                    std::span<const PhysRun> dst, uint32_t mthd);

}  // namespace vgpu::gpu
