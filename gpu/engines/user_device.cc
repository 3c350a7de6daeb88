// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/user_device.h"

#include <algorithm>

#include "common/launch_trace.h"
#include "gpu/engines/device_work.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/method_table.h"
#include "gpu/engines/user_kernel.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

namespace {

using cls::compute::APERTURE_BASE;
using cls::compute::APERTURE_BLOCK;
using cls::compute::APERTURE_END;

// The runs of one 2 MiB block mapped wholly in VRAM, appended to `out`
// (coalesced with the run before where they continue it); false, with
// nothing appended, when any of it is unmapped or in system memory.
bool block_runs(Mmu& mmu, const AccessContext& as, uint64_t va, std::vector<ApertureRun>& out) {
  std::vector<PhysRun> runs;
  auto collect = [&](const PhysRun& r) { runs.push_back(r); };
  bool writable = true;
  auto walked = mmu.for_each_phys_run(as, va, APERTURE_BLOCK, true, collect);
  if (!walked && walked.error().reason == regs::FaultReason::page_read_only) {
    runs.clear();
    writable = false;
    walked = mmu.for_each_phys_run(as, va, APERTURE_BLOCK, false, collect);
  }
  if (!walked) return false;
  if (std::ranges::any_of(runs, &PhysRun::sysmem)) return false;
  for (const PhysRun& r : runs) {
    ApertureRun* last = out.empty() ? nullptr : &out.back();
    if (last && last->writable == writable && last->va + last->bytes == r.va && last->phys + last->bytes == r.phys)
      last->bytes += r.bytes;
    else
      out.push_back({r.va, r.phys, r.bytes, writable});
  }
  return true;
}

}  // namespace

std::vector<ApertureRun> aperture_runs(Mmu& mmu, const AccessContext& as) {
  std::vector<ApertureRun> out;
  const uint64_t end = std::min(APERTURE_END, as.limit + 1);
  for (uint64_t span = APERTURE_BASE; span < end; span += fmt::PDE_SPAN) {
    auto t = mmu.translate(as, span, false);
    if (!t && t.error().reason == regs::FaultReason::pt_not_present) continue;  // no table under this PDE
    if (!t && t.error().reason == regs::FaultReason::vm_limit_exceeded) break;
    for (uint64_t va = span; va < span + fmt::PDE_SPAN && va + APERTURE_BLOCK <= end; va += APERTURE_BLOCK)
      (void)block_runs(mmu, as, va, out);
  }
  return out;
}

std::vector<ApertureRun> ApertureCache::get(Mmu& mmu, const AccessContext& as) {
  const uint64_t generation = mmu.generation();
  {
    std::lock_guard lock(mu_);
    for (const Entry& e : entries_)
      if (e.pdb == as.pdb && e.limit == as.limit && e.generation == generation) return e.runs;
  }
  std::vector<ApertureRun> runs = aperture_runs(mmu, as);
  if (mmu.generation() != generation) return runs;  // an invalidate raced the walk: not kept
  std::lock_guard lock(mu_);
  entries_[next_] = Entry{as.pdb, as.limit, generation, runs};
  next_ = (next_ + 1) % ENTRIES;
  return runs;
}

namespace {

// The report and the channel's error for a launch the device failed.
MethodDone device_launch_failed(ChannelContext& ctx, const UserLaunch& l, uint32_t mthd) {
  const Device& dev = ctx.device->device;
  const std::optional<Device::Failure> f = dev.failure(ctx.chid);
  cls::PtxStatus status = cls::PtxStatus::illegal;
  regs::ChannelError code = f ? f->code : regs::ChannelError::internal;
  if (f && f->memory_fault) {
    status = cls::PtxStatus::mmu_fault;
    code = regs::ChannelError::kernel_error;  // no FAULT_INFO: the device does not give the walk's fault
  } else if (code == regs::ChannelError::timeout) {
    status = cls::PtxStatus::timeout;
  }
  const uint64_t addr = f ? f->addr : 0;
  const std::string why = f ? f->reason : "the device failed the launch";
  if (auto w = write_report(ctx, l.report_va, make_report(status, 0, addr, why), *l.slots, mthd); !w) return w;
  return channel_fault(code, mthd, addr);
}

}  // namespace

MethodDone user_launch_on_device(ChannelContext& ctx, const UserLaunch& l, uint32_t mthd) {
  Device& dev = ctx.device->device;
  ResidencyTracker& res = ctx.device->residency;
  const Device::Stream stream = ctx.chid;
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);
  const std::vector<ApertureRun> aperture = ctx.device->apertures.get(ctx.mmu, ctx.as);
  // The kernel may read and write any of it: valid on the device first.
  for (const ApertureRun& r : aperture) {
    if (r.writable)
      res.prepare_write(r.phys, r.bytes, false, stream);
    else
      res.prepare_read(r.phys, r.bytes, stream);
  }
  LaunchTrace::mark(LaunchPhase::device_prepared);
  dev.launch_user(stream, DeviceUserLaunch{
                              .slot = l.slot,
                              .entry = l.entry,
                              .grid = {l.grid[0], l.grid[1], l.grid[2]},
                              .block = {l.block[0], l.block[1], l.block[2]},
                              .shared_bytes = l.shared_bytes,
                              .params = l.params,
                              .piece_blocks = ctx.slice_blocks,
                              .aperture = aperture,
                          });
  LaunchTrace::mark(LaunchPhase::device_launched);
  std::optional<uint64_t> queued;
  for (const ApertureRun& r : aperture)
    if (r.writable) queued = res.queue_direct_downloads(r.phys, r.bytes, stream);
  const bool ok = dev.synchronize(stream).has_value();
  LaunchTrace::mark(LaunchPhase::device_synced);
  Vram& vram = ctx.mmu.vram();
  for (const ApertureRun& r : aperture)
    if (r.writable) {
      res.finish_write(r.phys, r.bytes, queued);
      vram.mark_written(r.phys, r.bytes);  // the dirty log: anything writable may have been written
    }
  if (!ok) return device_launch_failed(ctx, l, mthd);
  if (!deadline.charge(start, ctx.clock.now_ns() - start)) return channel_fault(regs::ChannelError::timeout, mthd);
  return MethodDone{};
}

std::optional<std::string> load_on_device(ChannelContext& ctx, uint32_t slot, const std::string& text,
                                          uint64_t data_va) {
  auto loaded = ctx.device->device.load_user_module(ctx.chid, slot, text, data_va);
  if (loaded) return std::nullopt;
  return loaded.error().message;
}

}  // namespace vgpu::gpu
