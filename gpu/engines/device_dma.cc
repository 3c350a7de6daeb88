// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/device_dma.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gpu/engines/device_runs.h"
#include "gpu/engines/device_work.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/method_table.h"

namespace vgpu::gpu {

namespace {

// One side as the device reaches it, or none when a system-memory run has
// no host span.
std::optional<CopySide> reach(Device& dev, DmaHold& hold, std::span<const PhysRun> runs, uint64_t base,
                              uint64_t pitch) {
  CopySide side{{}, base, pitch};
  side.runs.reserve(runs.size());
  for (const PhysRun& r : runs) {
    std::byte* p = r.sysmem ? hold.span(r.phys, r.bytes) : dev.mirror(r.phys);
    if (p == nullptr) return std::nullopt;
    side.runs.push_back({r.va, r.bytes, p, r.sysmem});
  }
  return side;
}

bool touches_sysmem(std::span<const PhysRun> runs) {
  return std::any_of(runs.begin(), runs.end(), [](const PhysRun& r) { return r.sysmem; });
}

}  // namespace

std::optional<MethodDone> pitch_copy_sysmem_on_device(ChannelContext& ctx, const PitchCopy& c,
                                                      std::span<const PhysRun> src, std::span<const PhysRun> dst,
                                                      uint32_t mthd) {
  if (touches_sysmem(src) && touches_sysmem(dst)) return std::nullopt;  // RAM to RAM: the model's memcpy
  Device& dev = ctx.device->device;
  ResidencyTracker& res = ctx.device->residency;
  const Device::Stream stream = ctx.chid;
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);

  // The hold keeps the spans mapped and registered until the stream is
  // synchronized: removing a bus window (a VM's teardown) waits for it.
  const std::shared_ptr<SystemMemory> memory = ctx.mmu.system_memory();
  const std::unique_ptr<DmaHold> hold = memory->hold_host();
  if (!hold) return std::nullopt;
  auto from = reach(dev, *hold, src, c.src, c.pitch_in);
  auto to = reach(dev, *hold, dst, c.dst, c.pitch_out);
  if (!from || !to) return std::nullopt;
  if (runs_overlap({src.begin(), src.end()}, {dst.begin(), dst.end()})) return std::nullopt;

  // The VRAM side follows the residency rules (docs/cuda.md, "Memory").
  prepare_runs(res, src, kernels::Access::read, stream);
  prepare_runs(res, dst, c.pitch_out == c.line_bytes ? kernels::Access::write : kernels::Access::read_write, stream);
  const bool expired = !copy_lines(dev, stream, *from, *to, c.line_bytes, c.lines, deadline);
  const uint64_t queued = queue_run_downloads(res, dst, stream);
  const bool ok = dev.synchronize(stream).has_value();
  finish_runs(res, dst, queued);
  if (!ok) return device_channel_fault(dev, stream, mthd);
  if (expired || !deadline.charge(start, kernels::stream_cost_ns(ctx.cost, c.total_bytes() * 2)))
    return channel_fault(regs::ChannelError::timeout, mthd);
  return MethodDone{};
}

}  // namespace vgpu::gpu
