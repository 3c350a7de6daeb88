// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/device_runs.h"

#include <algorithm>

namespace vgpu::gpu {

void prepare_runs(ResidencyTracker& res, std::span<const PhysRun> runs, kernels::Access access, Device::Stream s) {
  for (const PhysRun& r : runs) {
    if (r.sysmem) continue;
    if (access == kernels::Access::read)
      res.prepare_read(r.phys, r.bytes, s);
    else
      res.prepare_write(r.phys, r.bytes, access == kernels::Access::write, s);
  }
}

uint64_t queue_run_downloads(ResidencyTracker& res, std::span<const PhysRun> runs, Device::Stream s) {
  uint64_t gen = 0;
  for (const PhysRun& r : runs)
    if (!r.sysmem) gen = res.queue_direct_downloads(r.phys, r.bytes, s);
  return gen;
}

void finish_runs(ResidencyTracker& res, std::span<const PhysRun> runs, std::optional<uint64_t> queued) {
  for (const PhysRun& r : runs)
    if (!r.sysmem) res.finish_write(r.phys, r.bytes, queued);
}

void begin_run_writes(ResidencyTracker& res, std::span<const PhysRun> runs) {
  for (const PhysRun& r : runs)
    if (!r.sysmem) res.begin_write(r.phys, r.bytes);
}

CopySide mirror_side(Device& dev, std::span<const PhysRun> runs, uint64_t base, uint64_t pitch) {
  CopySide side{{}, base, pitch};
  side.runs.reserve(runs.size());
  for (const PhysRun& r : runs) side.runs.push_back({r.va, r.bytes, dev.mirror(r.phys), false});
  return side;
}

CopySide dense_side(std::byte* scratch, uint64_t line_bytes, uint64_t lines) {
  return {{{0, line_bytes * lines, scratch, false}}, 0, line_bytes};
}

namespace {

// Where an address of a side lies; callers move forward or backward by
// small steps, so the search starts at the last run.
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

// One 2D piece in the direction its two ends ask for.
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

bool copy_lines(Device& dev, Device::Stream s, const CopySide& from, const CopySide& to, uint64_t line_bytes,
                uint64_t lines, const EngineDeadline& deadline) {
  const bool lines_apart = lines <= 1 || (from.pitch >= line_bytes && to.pitch >= line_bytes);
  if (from.runs.size() == 1 && to.runs.size() == 1 && lines_apart) {
    const Reach& f = from.runs.front();
    const Reach& t = to.runs.front();
    move(dev, s, f, f.ptr + (from.base - f.va), from.pitch, t, t.ptr + (to.base - t.va), to.pitch, line_bytes, lines);
    return true;
  }
  Cursor fc(from.runs), tc(to.runs);
  uint64_t pieces = 0;
  bool expired = false;  // checked every 4096 pieces; the line in progress is finished
  for (uint64_t line = 0; line < lines && !expired; ++line) {
    uint64_t done = 0;
    while (done < line_bytes) {
      const uint64_t fva = from.base + line * from.pitch + done, tva = to.base + line * to.pitch + done;
      const Reach& f = fc.at(fva);
      const Reach& t = tc.at(tva);
      const uint64_t n = std::min({f.va + f.bytes - fva, t.va + t.bytes - tva, line_bytes - done});
      move(dev, s, f, f.ptr + (fva - f.va), n, t, t.ptr + (tva - t.va), n, n, 1);
      done += n;
      if (++pieces % 4096 == 0 && deadline.expired()) expired = true;
    }
  }
  return !expired;
}

}  // namespace vgpu::gpu
