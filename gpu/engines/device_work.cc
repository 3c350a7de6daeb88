// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/device_work.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/launch_trace.h"
#include "common/clock.h"
#include "gpu/engines/device_dma.h"
#include "gpu/engines/device_runs.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/engine_limits.h"
#include "gpu/engines/method_table.h"

namespace vgpu::gpu {

namespace {

using kernels::Access;
using kernels::BufferUse;

// One walk of the range's tables gives both the runs and their apertures;
// a placement made since the MMU's last invalidate is used as it is.
Walk<Placed> place(ChannelContext& ctx, uint64_t va, uint64_t bytes, bool write, bool& too_many) {
  too_many = false;
  PlacementCache& cache = ctx.device->placements;
  const auto key = PlacementCache::key(ctx.as, va, bytes, write);
  const uint64_t generation = ctx.mmu.generation();
  if (auto hit = cache.find(key, generation)) return std::move(*hit);
  Placed p;
  p.bytes = bytes;
  if (bytes == 0) return p;
  auto r = ctx.mmu.for_each_phys_run(ctx.as, va, bytes, write, [&](const PhysRun& run) {
    p.sysmem = p.sysmem || run.sysmem;
    PhysRun* last = p.runs.empty() ? nullptr : &p.runs.back();
    if (last && last->sysmem == run.sysmem && last->phys + last->bytes == run.phys)
      last->bytes += run.bytes;  // physically adjacent pages of different PTEs
    else if (p.runs.size() < MAX_DEVICE_RUNS)
      p.runs.push_back(run);
    else
      too_many = true;
  });
  if (!r) return std::unexpected(r.error());
  if (!too_many && ctx.mmu.generation() == generation) cache.add(key, generation, p);
  return p;
}

// Pairs of (device offset within the buffer, run): gather and scatter.
void gather(Device& dev, Device::Stream s, const Placed& p, std::byte* scratch) {
  uint64_t off = 0;
  for (const PhysRun& r : p.runs) {
    dev.copy(s, scratch + off, dev.mirror(r.phys), r.bytes);
    off += r.bytes;
  }
}

void scatter(Device& dev, Device::Stream s, const Placed& p, const std::byte* scratch) {
  uint64_t off = 0;
  for (const PhysRun& r : p.runs) {
    dev.copy(s, dev.mirror(r.phys), scratch + off, r.bytes);
    off += r.bytes;
  }
}

// One buffer of a kernel launch on the device.
struct DeviceBuffer {
  BufferUse use;
  Placed placed;
  std::byte* scratch = nullptr;
  std::byte* data = nullptr;  // in device memory: its mirror, or the gathered scratch
};

using Bound = NamedBuffers<DeviceBuffer>;

void launch(Device& dev, Device::Stream s, const KernelLaunch& l, const Bound& b) {
  const auto args = l.arg_span();
  switch (l.kernel) {
    case cls::Kernel::fill: dev.fill(s, b.f32("dst"), b.count("dst"), decode_args<cls::FillArgs>(args).value); break;
    case cls::Kernel::saxpy:
      dev.saxpy(s, decode_args<cls::SaxpyArgs>(args).a, b.f32("x"), b.f32("y"), std::min(b.count("x"), b.count("y")));
      break;
    case cls::Kernel::madd:
      dev.madd(s, b.f32("a"), b.f32("b"), b.f32("c"), std::min({b.count("a"), b.count("b"), b.count("c")}));
      break;
    case cls::Kernel::sgemm: dev.sgemm(s, decode_args<cls::SgemmArgs>(args), b.f32("a"), b.f32("b"), b.f32("c")); break;
    case cls::Kernel::conv2d:
      dev.conv2d(s, decode_args<cls::Conv2dArgs>(args), b.f32("input"), b.f32("filter"), b.f32("output"));
      break;
    case cls::Kernel::mriq: {
      const auto a = decode_args<cls::MriqArgs>(args);
      dev.mriq(s, a.num_k, a.num_x, b.f32("kx"), b.f32("ky"), b.f32("kz"), b.f32("phi_mag"), b.f32("x"), b.f32("y"),
               b.f32("z"), b.f32("qr"), b.f32("qi"));
      break;
    }
    case cls::Kernel::spin: dev.spin(s, decode_args<cls::SpinArgs>(args).duration_ns); break;
    case cls::Kernel::user: break;  // user kernels never come here: the model's interpreter runs them
  }
}

// The release that follows the work (ChannelContext::following_release),
// queued on the stream after it: only a release to a direct-mapped VRAM
// page, whose device copy is never trusted, so the device may write its
// host word behind the tracker. Once the word can be visible, the work's
// written pages are `writing`: a CPU read downloads them even before
// finish_write. Returns whether the word was queued.
bool queue_following_release(ChannelContext& ctx, std::span<const std::span<const PhysRun>> written, Device::Stream s) {
  if (!ctx.following_release) return false;
  const FollowingRelease& r = *ctx.following_release;
  if (r.va % sizeof(uint32_t) != 0 || r.written == nullptr) return false;
  auto t = ctx.mmu.translate(ctx.as, r.va, true);
  if (!t || t->sysmem || !ctx.device->residency.direct(t->phys)) return false;
  for (std::span<const PhysRun> runs : written) begin_run_writes(ctx.device->residency, runs);
  return ctx.device->device.write_host_word(s, t->phys, r.payload);
}

// The work and its release are complete: PFIFO writes the release no more.
void following_release_written(const ChannelContext& ctx) {
  ctx.following_release->written->store(ctx.following_release->token, std::memory_order_release);
}

}  // namespace

std::unexpected<ChannelFault> device_channel_fault(const Device& dev, Device::Stream stream, uint32_t mthd) {
  const std::optional<Device::Failure> f = dev.failure(stream);
  return channel_fault(f ? f->code : regs::ChannelError::internal, mthd, f ? f->addr : 0);
}

namespace {

// The spin kernel: virtual time on a model's clock, a device spin on a real one.
std::optional<MethodDone> spin_on_device(ChannelContext& ctx, const KernelLaunch& l, uint32_t mthd, uint64_t start,
                                         EngineDeadline& deadline) {
  Device& dev = ctx.device->device;
  const Device::Stream stream = ctx.chid;
  const uint64_t ns = decode_args<cls::SpinArgs>(l.arg_span()).duration_ns;
  // A virtual clock keeps the model's spin (virtual time, no real wait).
  if (dynamic_cast<RealClock*>(&ctx.clock) == nullptr) {
    if (!deadline.sleep(start, ns)) return channel_fault(regs::ChannelError::timeout, mthd);
    return MethodDone{};
  }
  // A spin past the entry's budget stops at it, as the model's does.
  const uint64_t budget = ctx.engine_budget_ns.value_or(~uint64_t{0});
  dev.spin(stream, std::min(ns, budget));
  // A spin cut at the budget did not finish: no fence for it.
  const bool released = ns <= budget && queue_following_release(ctx, {}, stream);
  if (!dev.synchronize(stream)) return device_channel_fault(dev, stream, mthd);
  if (ns > budget || !deadline.charge(start, ns)) return channel_fault(regs::ChannelError::timeout, mthd);
  if (released) following_release_written(ctx);
  return MethodDone{};
}

}  // namespace

std::optional<MethodDone> run_kernel_on_device(ChannelContext& ctx, const KernelLaunch& l, uint32_t mthd) {
  Device& dev = ctx.device->device;
  ResidencyTracker& res = ctx.device->residency;
  const Device::Stream stream = ctx.chid;
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);

  if (l.kernel == cls::Kernel::spin) return spin_on_device(ctx, l, mthd, start, deadline);

  std::vector<DeviceBuffer> bufs;
  bufs.reserve(l.footprint.count);
  uint64_t gathered = 0;  // scratch bytes: the model's bounce budget bounds them
  for (const BufferUse& use : l.footprint.buffers()) {
    DeviceBuffer& d = bufs.emplace_back(DeviceBuffer{.use = use, .placed = {}});
    bool too_many = false;
    auto p = place(ctx, use.va, use.bytes, use.writable(), too_many);
    if (!p) return mmu_channel_fault(mthd, p.error());
    if (too_many) return channel_fault(regs::ChannelError::bad_argument, mthd, use.va);
    d.placed = std::move(*p);
    if (d.placed.sysmem) return std::nullopt;  // nothing done on the device yet
    if (d.placed.runs.size() > 1) {
      if (use.bytes > MAX_BOUNCE_BYTES - gathered) return channel_fault(regs::ChannelError::bad_argument, mthd, use.va);
      gathered += use.bytes;
    }
  }
  // Reads first: a buffer both read and written through aliases is uploaded.
  for (const DeviceBuffer& d : bufs)
    if (!d.use.writable()) prepare_runs(res, d.placed.runs, d.use.access, stream);
  for (const DeviceBuffer& d : bufs)
    if (d.use.writable()) prepare_runs(res, d.placed.runs, d.use.access, stream);

  auto release = [&] {
    for (DeviceBuffer& d : bufs)
      if (d.scratch) dev.free(stream, d.scratch);
  };
  for (DeviceBuffer& d : bufs) {
    if (d.placed.runs.empty()) continue;
    if (d.placed.contiguous()) {
      d.data = dev.mirror(d.placed.runs.front().phys);
      continue;
    }
    d.scratch = dev.alloc(stream, d.placed.bytes);
    if (d.scratch == nullptr) {
      release();
      return channel_fault(regs::ChannelError::internal, mthd, d.use.va);
    }
    if (d.use.access != Access::write) gather(dev, stream, d.placed, d.scratch);
    d.data = d.scratch;
  }

  LaunchTrace::mark(LaunchPhase::device_prepared);
  launch(dev, stream, l, Bound(bufs));
  LaunchTrace::mark(LaunchPhase::device_launched);

  for (const DeviceBuffer& d : bufs)
    if (d.scratch && d.use.writable()) scatter(dev, stream, d.placed, d.scratch);
  release();
  std::optional<uint64_t> queued;
  std::vector<std::span<const PhysRun>> written;
  for (const DeviceBuffer& d : bufs)
    if (d.use.writable()) {
      queued = queue_run_downloads(res, d.placed.runs, stream);
      written.push_back(d.placed.runs);
    }
  const bool released = queue_following_release(ctx, written, stream);
  const bool ok = dev.synchronize(stream).has_value();
  LaunchTrace::mark(LaunchPhase::device_synced);
  for (const DeviceBuffer& d : bufs)
    if (d.use.writable()) finish_runs(res, d.placed.runs, queued);
  if (!ok) return device_channel_fault(dev, stream, mthd);
  // Work that ran past its budget did finish, on a device: its fence is
  // honest, and the channel still stops with timeout.
  if (!deadline.charge(start, kernel_cost_ns(ctx.cost, l))) return channel_fault(regs::ChannelError::timeout, mthd);
  if (released) following_release_written(ctx);
  return MethodDone{};
}

std::optional<MethodDone> pitch_copy_on_device(ChannelContext& ctx, const PitchCopy& c, uint32_t mthd) {
  if (c.total_bytes() == 0) return MethodDone{};
  Device& dev = ctx.device->device;
  ResidencyTracker& res = ctx.device->residency;
  const Device::Stream stream = ctx.chid;
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);

  bool too_many = false;
  auto src = place(ctx, c.src, c.src_extent(), false, too_many);
  if (!src) return mmu_channel_fault(mthd, src.error());
  if (too_many) return channel_fault(regs::ChannelError::bad_argument, mthd, c.src);
  auto dst = place(ctx, c.dst, c.dst_extent(), true, too_many);
  if (!dst) return mmu_channel_fault(mthd, dst.error());
  if (too_many) return channel_fault(regs::ChannelError::bad_argument, mthd, c.dst);
  if (src->sysmem || dst->sysmem) return pitch_copy_sysmem_on_device(ctx, c, src->runs, dst->runs, mthd);

  // Overlap (memmove semantics): through a packed scratch copy.
  const bool staged = runs_overlap(src->runs, dst->runs);
  if (staged && c.total_bytes() > MAX_BOUNCE_BYTES) {
    // Too large to stage: the model's piecewise copy, on host-valid pages.
    for (const PhysRun& r : src->runs) res.host_access(r.phys, r.bytes, false);
    for (const PhysRun& r : dst->runs) res.host_access(r.phys, r.bytes, true);
    auto r = pitch_copy_until(ctx.mmu, ctx.as, c, [&] { return deadline.expired(); });
    if (!r) return mmu_channel_fault(mthd, r.error());
    if (!*r || !deadline.charge(start, kernels::stream_cost_ns(ctx.cost, c.total_bytes() * 2)))
      return channel_fault(regs::ChannelError::timeout, mthd);
    return MethodDone{};
  }
  prepare_runs(res, src->runs, Access::read, stream);
  prepare_runs(res, dst->runs, c.pitch_out == c.line_bytes ? Access::write : Access::read_write, stream);
  const CopySide from = mirror_side(dev, src->runs, c.src, c.pitch_in);
  const CopySide to = mirror_side(dev, dst->runs, c.dst, c.pitch_out);
  bool expired = false;
  if (staged) {
    std::byte* scratch = dev.alloc(stream, c.total_bytes());
    if (scratch == nullptr) return channel_fault(regs::ChannelError::internal, mthd, c.dst);
    const CopySide packed = dense_side(scratch, c.line_bytes, c.lines);
    expired = !copy_lines(dev, stream, from, packed, c.line_bytes, c.lines, deadline) ||
              !copy_lines(dev, stream, packed, to, c.line_bytes, c.lines, deadline);
    dev.free(stream, scratch);
  } else {
    expired = !copy_lines(dev, stream, from, to, c.line_bytes, c.lines, deadline);
  }
  const uint64_t queued = queue_run_downloads(res, dst->runs, stream);
  // A copy cut at its deadline did not finish: no fence for it.
  const std::span<const PhysRun> written[] = {dst->runs};
  const bool released = !expired && queue_following_release(ctx, written, stream);
  const bool ok = dev.synchronize(stream).has_value();
  finish_runs(res, dst->runs, queued);
  if (!ok) return device_channel_fault(dev, stream, mthd);
  const uint64_t traffic = c.total_bytes() * 2;
  if (expired || !deadline.charge(start, kernels::stream_cost_ns(ctx.cost, traffic)))
    return channel_fault(regs::ChannelError::timeout, mthd);
  if (released) following_release_written(ctx);
  return MethodDone{};
}

}  // namespace vgpu::gpu
