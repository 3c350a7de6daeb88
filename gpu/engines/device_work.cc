// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/device_work.h"

#include <algorithm>
#include <optional>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "gpu/engines/device_dma.h"
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

void prepare(ResidencyTracker& res, const Placed& p, Access access, Device::Stream s) {
  for (const PhysRun& r : p.runs) {
    if (access == Access::read)
      res.prepare_read(r.phys, r.bytes, s);
    else
      res.prepare_write(r.phys, r.bytes, access == Access::write, s);
  }
}

// Before the stream's synchronize: the downloads of written direct-mapped
// pages join the work; returns the tracker's direct-mapping generation.
uint64_t queue_downloads(ResidencyTracker& res, const Placed& p, Device::Stream s) {
  uint64_t gen = 0;
  for (const PhysRun& r : p.runs) gen = res.queue_direct_downloads(r.phys, r.bytes, s);
  return gen;
}

void finish(ResidencyTracker& res, const Placed& p, std::optional<uint64_t> queued) {
  for (const PhysRun& r : p.runs) res.finish_write(r.phys, r.bytes, queued);
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
  }
}

}  // namespace

std::optional<MethodDone> run_kernel_on_device(ChannelContext& ctx, const KernelLaunch& l, uint32_t mthd) {
  Device& dev = ctx.device->device;
  ResidencyTracker& res = ctx.device->residency;
  const Device::Stream stream = ctx.chid;
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);

  if (l.kernel == cls::Kernel::spin) {
    const uint64_t ns = decode_args<cls::SpinArgs>(l.arg_span()).duration_ns;
    // A virtual clock keeps the model's spin (virtual time, no real wait).
    if (dynamic_cast<RealClock*>(&ctx.clock) == nullptr) {
      if (!deadline.sleep(start, ns)) return channel_fault(regs::ChannelError::timeout, mthd);
      return MethodDone{};
    }
    // A spin past the entry's budget stops at it, as the model's does.
    const uint64_t budget = ctx.engine_budget_ns.value_or(~uint64_t{0});
    dev.spin(stream, std::min(ns, budget));
    if (!dev.synchronize(stream)) return channel_fault(regs::ChannelError::internal, mthd);
    if (ns > budget || !deadline.charge(start, ns)) return channel_fault(regs::ChannelError::timeout, mthd);
    return MethodDone{};
  }

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
    if (!d.use.writable()) prepare(res, d.placed, d.use.access, stream);
  for (const DeviceBuffer& d : bufs)
    if (d.use.writable()) prepare(res, d.placed, d.use.access, stream);

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

  launch(dev, stream, l, Bound(bufs));

  for (const DeviceBuffer& d : bufs)
    if (d.scratch && d.use.writable()) scatter(dev, stream, d.placed, d.scratch);
  release();
  std::optional<uint64_t> queued;
  for (const DeviceBuffer& d : bufs)
    if (d.use.writable()) queued = queue_downloads(res, d.placed, stream);
  const bool ok = dev.synchronize(stream).has_value();
  for (const DeviceBuffer& d : bufs)
    if (d.use.writable()) finish(res, d.placed, queued);
  if (!ok) return channel_fault(regs::ChannelError::internal, mthd);
  if (!deadline.charge(start, kernel_cost_ns(ctx.cost, l))) return channel_fault(regs::ChannelError::timeout, mthd);
  return MethodDone{};
}

namespace {

// Where a VA of a placed range lies on the device, and how many bytes
// stay contiguous from there.
struct Spot {
  std::byte* ptr;
  uint64_t left;
};

class Locator {
 public:
  Locator(Device& dev, const Placed& p) : dev_(dev), p_(p) {}
  Spot at(uint64_t va) {
    // Callers move forward or backward by small steps: start at the last run.
    while (i_ > 0 && va < p_.runs[i_].va) --i_;
    while (i_ + 1 < p_.runs.size() && va >= p_.runs[i_].va + p_.runs[i_].bytes) ++i_;
    const PhysRun& r = p_.runs[i_];
    return {dev_.mirror(r.phys + (va - r.va)), r.va + r.bytes - va};
  }

 private:
  Device& dev_;
  const Placed& p_;
  size_t i_ = 0;
};

}  // namespace

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
  prepare(res, *src, Access::read, stream);
  prepare(res, *dst, c.pitch_out == c.line_bytes ? Access::write : Access::read_write, stream);
  std::byte* scratch = nullptr;
  if (staged) {
    scratch = dev.alloc(stream, c.total_bytes());
    if (scratch == nullptr) return channel_fault(regs::ChannelError::internal, mthd, c.dst);
  }
  bool expired = false;
  auto move = [&](const Placed& from, uint64_t from_va, uint64_t from_pitch, const std::byte* from_dense,
                  const Placed& to, uint64_t to_va, uint64_t to_pitch, std::byte* to_dense) {
    // A 2D copy takes pitches of at least its width only (lines that
    // overlap one another go line by line below).
    const bool rows_apart = c.lines <= 1 || (from_pitch >= c.line_bytes && to_pitch >= c.line_bytes);
    if (rows_apart && from_dense == nullptr && to_dense == nullptr && from.contiguous() && to.contiguous()) {
      dev.copy_2d(stream, dev.mirror(to.runs[0].phys), to_pitch, dev.mirror(from.runs[0].phys), from_pitch,
                  c.line_bytes, c.lines);
      return;
    }
    if (rows_apart && from.contiguous() && to_dense != nullptr) {
      dev.copy_2d(stream, to_dense, c.line_bytes, dev.mirror(from.runs[0].phys), from_pitch, c.line_bytes, c.lines);
      return;
    }
    if (rows_apart && to.contiguous() && from_dense != nullptr) {
      dev.copy_2d(stream, dev.mirror(to.runs[0].phys), to_pitch, from_dense, c.line_bytes, c.line_bytes, c.lines);
      return;
    }
    Locator fl(dev, from), tl(dev, to);
    uint64_t pieces = 0;
    for (uint64_t line = 0; line < c.lines && !expired; ++line) {
      uint64_t done = 0;
      while (done < c.line_bytes) {
        Spot f = from_dense ? Spot{const_cast<std::byte*>(from_dense) + line * c.line_bytes + done, c.line_bytes - done}
                            : fl.at(from_va + line * from_pitch + done);
        Spot t = to_dense ? Spot{to_dense + line * c.line_bytes + done, c.line_bytes - done}
                          : tl.at(to_va + line * to_pitch + done);
        const uint64_t n = std::min({f.left, t.left, c.line_bytes - done});
        dev.copy(stream, t.ptr, f.ptr, n);
        done += n;
        if (++pieces % 4096 == 0 && deadline.expired()) expired = true;
      }
    }
  };
  if (staged) {
    move(*src, c.src, c.pitch_in, nullptr, *dst, c.dst, c.pitch_out, scratch);
    if (!expired) move(*dst, c.dst, c.pitch_out, scratch, *dst, c.dst, c.pitch_out, nullptr);
    dev.free(stream, scratch);
  } else {
    move(*src, c.src, c.pitch_in, nullptr, *dst, c.dst, c.pitch_out, nullptr);
  }
  const uint64_t queued = queue_downloads(res, *dst, stream);
  const bool ok = dev.synchronize(stream).has_value();
  finish(res, *dst, queued);
  if (!ok) return channel_fault(regs::ChannelError::internal, mthd);
  const uint64_t traffic = c.total_bytes() * 2;
  if (expired || !deadline.charge(start, kernels::stream_cost_ns(ctx.cost, traffic)))
    return channel_fault(regs::ChannelError::timeout, mthd);
  return MethodDone{};
}

}  // namespace vgpu::gpu
