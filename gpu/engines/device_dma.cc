// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/device_dma.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gpu/engines/device_work.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/method_table.h"

namespace vgpu::gpu {

namespace {

// A run as the device reaches it: the VRAM mirror, or registered host
// memory (system memory).
struct Reach {
  uint64_t va;
  uint64_t bytes;
  std::byte* ptr;
  bool host;
};

// The runs of one side, or none when a system-memory run has no host span.
std::optional<std::vector<Reach>> reach(Device& dev, DmaHold& hold, std::span<const PhysRun> runs) {
  std::vector<Reach> out;
  out.reserve(runs.size());
  for (const PhysRun& r : runs) {
    std::byte* p = r.sysmem ? hold.span(r.phys, r.bytes) : dev.mirror(r.phys);
    if (p == nullptr) return std::nullopt;
    out.push_back({r.va, r.bytes, p, r.sysmem});
  }
  return out;
}

bool touches_sysmem(std::span<const PhysRun> runs) {
  return std::any_of(runs.begin(), runs.end(), [](const PhysRun& r) { return r.sysmem; });
}

// Where a VA of a side lies, and how many bytes stay contiguous from there.
class Cursor {
 public:
  explicit Cursor(const std::vector<Reach>& runs) : runs_(runs) {}
  const Reach& at(uint64_t va) {
    while (i_ > 0 && va < runs_[i_].va) --i_;
    while (i_ + 1 < runs_.size() && va >= runs_[i_].va + runs_[i_].bytes) ++i_;
    return runs_[i_];
  }

 private:
  const std::vector<Reach>& runs_;
  size_t i_ = 0;
};

// One 2D piece in the direction its two ends ask for (never host to host:
// one side of the copy is all VRAM).
void move(Device& dev, Device::Stream s, const Reach& from, const std::byte* f, uint64_t fp, const Reach& to,
          std::byte* t, uint64_t tp, uint64_t width, uint64_t height) {
  if (from.host)
    dev.copy_2d_from_host(s, t, tp, f, fp, width, height);
  else if (to.host)
    dev.copy_2d_to_host(s, t, tp, f, fp, width, height);
  else
    dev.copy_2d(s, t, tp, f, fp, width, height);
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
  auto from = reach(dev, *hold, src);
  auto to = reach(dev, *hold, dst);
  if (!from || !to) return std::nullopt;
  if (runs_overlap({src.begin(), src.end()}, {dst.begin(), dst.end()})) return std::nullopt;

  // The VRAM side follows the residency rules (docs/cuda.md, "Memory").
  for (const PhysRun& r : src)
    if (!r.sysmem) res.prepare_read(r.phys, r.bytes, stream);
  for (const PhysRun& r : dst)
    if (!r.sysmem) res.prepare_write(r.phys, r.bytes, c.pitch_out == c.line_bytes, stream);

  bool expired = false;
  // One 2D copy where both sides are one run and lines do not overlap (a
  // 2D copy wants pitches of at least a line; else line by line, in order).
  const bool lines_apart = c.lines == 1 || (c.pitch_in >= c.line_bytes && c.pitch_out >= c.line_bytes);
  if (from->size() == 1 && to->size() == 1 && lines_apart) {
    move(dev, stream, from->front(), from->front().ptr, c.pitch_in, to->front(), to->front().ptr, c.pitch_out,
         c.line_bytes, c.lines);
  } else {
    Cursor fc(*from), tc(*to);
    uint64_t pieces = 0;
    for (uint64_t line = 0; line < c.lines && !expired; ++line) {
      uint64_t done = 0;
      while (done < c.line_bytes) {
        const uint64_t fva = c.src + line * c.pitch_in + done, tva = c.dst + line * c.pitch_out + done;
        const Reach& f = fc.at(fva);
        const Reach& t = tc.at(tva);
        const uint64_t n = std::min({f.va + f.bytes - fva, t.va + t.bytes - tva, c.line_bytes - done});
        move(dev, stream, f, f.ptr + (fva - f.va), n, t, t.ptr + (tva - t.va), n, n, 1);
        done += n;
        if (++pieces % 4096 == 0 && deadline.expired()) expired = true;
      }
    }
  }

  uint64_t queued = 0;
  for (const PhysRun& r : dst)
    if (!r.sysmem) queued = res.queue_direct_downloads(r.phys, r.bytes, stream);
  const bool ok = dev.synchronize(stream).has_value();
  for (const PhysRun& r : dst)
    if (!r.sysmem) res.finish_write(r.phys, r.bytes, queued);
  if (!ok) return channel_fault(regs::ChannelError::internal, mthd);
  if (expired || !deadline.charge(start, kernels::stream_cost_ns(ctx.cost, c.total_bytes() * 2)))
    return channel_fault(regs::ChannelError::timeout, mthd);
  return MethodDone{};
}

}  // namespace vgpu::gpu
