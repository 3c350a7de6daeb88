// SPDX-License-Identifier: GPL-2.0-or-later
// What the device back end's copies and launches share (docs/cuda.md):
// the residency steps for the VRAM runs a piece of work touches, and the
// line copier both copy paths use, VRAM to VRAM (device_work.cc) and
// between guest RAM and VRAM (device_dma.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gpu/device/device.h"
#include "gpu/device/residency.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/kernels/footprint.h"
#include "gpu/mem/mmu.h"

namespace vgpu::gpu {

// Residency of the VRAM runs among `runs` (system-memory runs are not
// VRAM and are skipped). Before work: make them valid on the device for
// the access; before the stream's synchronize: queue the downloads of
// written direct-mapped pages (returns the tracker's direct-mapping
// generation); after it: record the writes.
void prepare_runs(ResidencyTracker& res, std::span<const PhysRun> runs, kernels::Access access, Device::Stream s);
[[nodiscard]] uint64_t queue_run_downloads(ResidencyTracker& res, std::span<const PhysRun> runs, Device::Stream s);
void finish_runs(ResidencyTracker& res, std::span<const PhysRun> runs, std::optional<uint64_t> queued);
// Before a fence the GPU writes: the written runs' pages are `writing`.
void begin_run_writes(ResidencyTracker& res, std::span<const PhysRun> runs);

// A run as the device reaches it: the VRAM mirror, registered host memory
// (system memory), or scratch device memory.
struct Reach {
  uint64_t va;  // where the run starts in its side's addressing
  uint64_t bytes;
  std::byte* ptr;
  bool host;
};

// One side of a copy: its runs in address order, and where its lines are
// (line i starts at base + i * pitch).
struct CopySide {
  std::vector<Reach> runs;
  uint64_t base;
  uint64_t pitch;
};

// VRAM runs through the device's mirror.
CopySide mirror_side(Device& dev, std::span<const PhysRun> runs, uint64_t base, uint64_t pitch);
// A packed scratch buffer of `lines` lines of `line_bytes`.
CopySide dense_side(std::byte* scratch, uint64_t line_bytes, uint64_t lines);

// `lines` lines of `line_bytes` from one side to the other, ordered on the
// stream: one 2D copy when both sides are one run and their lines do not
// overlap one another (a GPU's 2D copy refuses a pitch below the width),
// else piece by piece in line order. Host to host never: one side is
// device memory. False when the deadline expired before all was queued.
[[nodiscard]] bool copy_lines(Device& dev, Device::Stream s, const CopySide& from, const CopySide& to,
                              uint64_t line_bytes, uint64_t lines, const EngineDeadline& deadline);

}  // namespace vgpu::gpu
