// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/kernel_launch.h"

#include "gpu/engines/engine_deadline.h"

#include "gpu/engines/device_work.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "gpu/engines/engine_limits.h"
#include "gpu/engines/method_table.h"
#include "gpu/engines/piece_sizer.h"
#include "gpu/kernels/kernels.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

namespace {

using kernels::CostModel;
using kernels::KernelFootprint;

constexpr uint64_t NS_PER_MS = 1'000'000;

// One buffer as the kernel sees it: a host view of GPU memory, or, where
// the host could not map a window, a bounce copy written back afterwards.
struct MappedBuffer {
  kernels::BufferUse use;
  HostView view;
  std::vector<std::byte> bounce;
  std::byte* data = nullptr;
};

using Buffers = NamedBuffers<MappedBuffer>;

// Units [first, first + count) of a launch (kernel_units).
struct Units {
  uint64_t first;
  uint64_t count;
};

// One row per built-in kernel: its work units, how to run some of them on
// mapped buffers, and what the whole launch costs in virtual time. Spin
// has no body: its cost is its duration.
struct KernelRow {
  cls::Kernel id;
  const char* name;
  uint64_t (*units)(std::span<const std::byte> args);
  void (*run)(std::span<const std::byte> args, const Buffers& b, Units u);
  uint64_t (*cost)(const CostModel& m, std::span<const std::byte> args, const KernelFootprint& fp);
  // A timed piece runs at least this many times its first chunk (one
  // block's units): the kernel's fixed cost per chunk (kernel_launch.h).
  uint64_t min_piece_per_chunk = MIN_PIECE_PER_CHUNK;
  // A kernel whose units are tiles of the tile pool: units from u.first as
  // one job of the pool until `stop` ends it; returns how many ran. A
  // timed piece is then one such job, its threads taking tiles until the
  // piece's time is up (chunks, each ending at a barrier of all tile
  // threads, left them idle: docs/scheduler.md, "Timed pieces as one pool
  // job"); null: chunks of run.
  uint64_t (*run_until)(std::span<const std::byte> args, const Buffers& b, Units u,
                        const kernels::TileStop& stop) = nullptr;
};

uint64_t sgemm_run_until(std::span<const std::byte> args, const Buffers& b, Units u, const kernels::TileStop& stop) {
  // Tiles [first, first + count) of C, as the whole launch computes them.
  const auto g = decode_args<cls::SgemmArgs>(args);
  const float* a = b.f32("a");
  float* c = b.f32("c");
  if (a == nullptr || c == nullptr) return u.count;
  return kernels::sgemm_tiles_run(g, a, b.f32("b"), c, u.first, u.count, stop);
}

uint64_t conv2d_run_until(std::span<const std::byte> args, const Buffers& b, Units u, const kernels::TileStop& stop) {
  // Tiles [first, first + count) of the output, as the whole launch computes them.
  return kernels::conv2d_tiles_run(decode_args<cls::Conv2dArgs>(args), b.f32("input"), b.f32("filter"), b.f32("output"),
                                   u.first, u.count, stop);
}

std::span<float> part(std::span<float> s, Units u) {
  if (u.first >= s.size()) return {};
  return s.subspan(u.first, std::min<uint64_t>(u.count, s.size() - u.first));
}

uint64_t stream_cost(const CostModel& m, std::span<const std::byte>, const KernelFootprint& fp) {
  return kernels::stream_cost_ns(m, fp.traffic_bytes());
}

// The row of a kernel whose units are tiles of the tile pool: its tile
// count and cost from its arguments, its chunks and pool jobs through
// RunUntil. A tile reads only what its own output needs, so pieces need
// no floor (min_piece_per_chunk 1).
template <typename Args, uint64_t (*Tiles)(const Args&), uint64_t (*CostNs)(const CostModel&, const Args&),
          uint64_t (*RunUntil)(std::span<const std::byte>, const Buffers&, Units, const kernels::TileStop&)>
constexpr KernelRow tiled_row(cls::Kernel id, const char* name) {
  return {id,
          name,
          [](std::span<const std::byte> args) -> uint64_t { return Tiles(decode_args<Args>(args)); },
          [](std::span<const std::byte> args, const Buffers& b, Units u) { RunUntil(args, b, u, {}); },
          [](const CostModel& m, std::span<const std::byte> args, const KernelFootprint&) {
            return CostNs(m, decode_args<Args>(args));
          },
          1,
          RunUntil};
}

constexpr KernelRow KERNELS[] = {
    {cls::Kernel::fill, "fill",
     [](std::span<const std::byte> args) -> uint64_t { return decode_args<cls::FillArgs>(args).count; },
     [](std::span<const std::byte> args, const Buffers& b, Units u) {
       kernels::fill(part(b.span("dst"), u), decode_args<cls::FillArgs>(args).value);
     },
     &stream_cost},
    {cls::Kernel::saxpy, "saxpy",
     [](std::span<const std::byte> args) -> uint64_t { return decode_args<cls::SaxpyArgs>(args).n; },
     [](std::span<const std::byte> args, const Buffers& b, Units u) {
       kernels::saxpy(decode_args<cls::SaxpyArgs>(args).a, part(b.span("x"), u), part(b.span("y"), u));
     },
     &stream_cost},
    {cls::Kernel::madd, "madd",
     [](std::span<const std::byte> args) -> uint64_t {
       const auto a = decode_args<cls::MaddArgs>(args);
       return uint64_t{a.rows} * a.cols;
     },
     [](std::span<const std::byte>, const Buffers& b, Units u) {
       kernels::madd(part(b.span("a"), u), part(b.span("b"), u), part(b.span("c"), u));
     },
     &stream_cost},
    // A tile reads its own rows of A and columns of B: no chunk re-reads
    // the whole of B.
    tiled_row<cls::SgemmArgs, &kernels::sgemm_tiles, &kernels::sgemm_cost_ns, &sgemm_run_until>(cls::Kernel::sgemm,
                                                                                                "sgemm"),
    // A chunk builds the im2col columns of its own bands only (at most
    // one band again where it starts inside one), not the whole image
    // per run of channels as (image, channel) units did.
    tiled_row<cls::Conv2dArgs, &kernels::conv2d_tiles, &kernels::conv2d_cost_ns, &conv2d_run_until>(cls::Kernel::conv2d,
                                                                                                    "conv2d"),
    {cls::Kernel::mriq, "mriq",
     [](std::span<const std::byte> args) -> uint64_t { return decode_args<cls::MriqArgs>(args).num_x; },
     [](std::span<const std::byte> args, const Buffers& b, Units u) {
       const auto a = decode_args<cls::MriqArgs>(args);
       if (u.first >= a.num_x) return;
       const uint64_t f = u.first;
       const auto n = static_cast<uint32_t>(std::min<uint64_t>(u.count, a.num_x - f));
       const auto at = [&](const char* name) { return b.f32(name) == nullptr ? nullptr : b.f32(name) + f; };
       kernels::mriq(a.num_k, n, b.f32("kx"), b.f32("ky"), b.f32("kz"), b.f32("phi_mag"), at("x"), at("y"), at("z"),
                     at("qr"), at("qi"));
     },
     [](const CostModel& m, std::span<const std::byte> args, const KernelFootprint&) {
       const auto a = decode_args<cls::MriqArgs>(args);
       return kernels::mriq_cost_ns(m, a.num_k, a.num_x);
     }},
    {cls::Kernel::spin, "spin",
     [](std::span<const std::byte> args) -> uint64_t { return decode_args<cls::SpinArgs>(args).duration_ns; }, nullptr,
     nullptr},
};

const KernelRow* find_kernel(cls::Kernel k) {
  const auto* row = std::ranges::find(KERNELS, k, &KernelRow::id);
  return row == std::end(KERNELS) ? nullptr : row;
}

// Every buffer is an array of float32.
constexpr uint64_t ELEMENT_ALIGN = alignof(float);

}  // namespace

bool kernel_known(cls::Kernel kernel) { return find_kernel(kernel) != nullptr; }

uint64_t kernel_cost_ns(const kernels::CostModel& m, const KernelLaunch& launch) {
  const KernelRow* row = find_kernel(launch.kernel);
  return row != nullptr && row->cost != nullptr ? row->cost(m, launch.arg_span(), launch.footprint) : 0;
}

std::expected<void, uint64_t> check_launch(const KernelLaunch& launch) {
  for (const kernels::BufferUse& b : launch.footprint.buffers()) {
    if (b.bytes == 0) continue;
    if (b.va % ELEMENT_ALIGN != 0) return std::unexpected(b.va);
    if (b.va > fmt::VA_LIMIT || b.bytes > fmt::VA_LIMIT - b.va) return std::unexpected(b.va);
  }
  if (launch.kernel == cls::Kernel::spin && decode_args<cls::SpinArgs>(launch.arg_span()).duration_ns > MAX_SPIN_NS)
    return std::unexpected(uint64_t{0});
  return {};
}

namespace {

// Units of blocks [0, b) of B: b * U / B without overflow.
uint64_t units_before(uint64_t b, uint64_t blocks, uint64_t units) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(b) * units / blocks);
}

// The modeled cost of `count` of the launch's `units`: the fixed launch
// cost, and the rest of the whole launch's cost in proportion.
uint64_t part_cost_ns(const CostModel& m, uint64_t whole_ns, uint64_t count, uint64_t units) {
  if (count >= units) return whole_ns;
  const uint64_t fixed = std::min(whole_ns, m.launch_ns);
  return fixed + static_cast<uint64_t>(static_cast<unsigned __int128>(whole_ns - fixed) * count / units);
}

}  // namespace

uint64_t kernel_units(const KernelLaunch& launch) {
  const KernelRow* row = find_kernel(launch.kernel);
  return row == nullptr ? 0 : row->units(launch.arg_span());
}

MethodDone run_kernel(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd) {
  if (find_kernel(launch.kernel) == nullptr) return channel_fault(regs::ChannelError::bad_program, mthd);
  if (ctx.device != nullptr)
    if (auto done = run_kernel_on_device(ctx, launch, mthd)) return *done;
  return run_kernel_blocks(ctx, launch, mthd, {0, launch.blocks});
}

namespace {

// Every buffer of the launch mapped (a view, or a bounce copy within the
// launch's budget); faults as mmu_fault at `mthd`.
std::expected<std::vector<MappedBuffer>, ChannelFault> map_buffers(ChannelContext& ctx, const KernelLaunch& launch,
                                                                   uint32_t mthd) {
  std::vector<MappedBuffer> mapped;
  mapped.reserve(launch.footprint.count);
  uint64_t bounced = 0;
  for (const kernels::BufferUse& use : launch.footprint.buffers()) {
    MappedBuffer& m = mapped.emplace_back(MappedBuffer{.use = use, .view = {}, .bounce = {}});
    if (use.bytes == 0) continue;
    auto view = ctx.mmu.map_range(ctx.as, use.va, use.bytes, use.writable());
    if (!view) return mmu_channel_fault(mthd, view.error());
    m.view = std::move(*view);
    m.data = m.view.data();
    if (m.data == nullptr) {
      // No view (a range scattered over too many runs, or mmap failed):
      // a copy, within the launch's bounce budget.
      if (use.bytes > MAX_BOUNCE_BYTES - bounced) return channel_fault(regs::ChannelError::bad_argument, mthd, use.va);
      bounced += use.bytes;
      m.bounce.resize(use.bytes);
      if (auto r = ctx.mmu.read(ctx.as, use.va, m.bounce.data(), use.bytes); !r)
        return mmu_channel_fault(mthd, r.error());
      m.data = m.bounce.data();
    }
  }
  return mapped;
}

// The bounce copies of written buffers back to GPU memory.
MethodDone write_back(ChannelContext& ctx, const std::vector<MappedBuffer>& mapped, uint32_t mthd) {
  for (const MappedBuffer& m : mapped) {
    if (m.bounce.empty() || !m.use.writable()) continue;
    if (auto r = ctx.mmu.write(ctx.as, m.use.va, m.bounce.data(), m.use.bytes); !r)
      return mmu_channel_fault(mthd, r.error());
  }
  return {};
}

}  // namespace

MethodDone run_kernel_blocks(ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd, BlockRange blocks) {
  const KernelRow* row = find_kernel(launch.kernel);
  if (row == nullptr) return channel_fault(regs::ChannelError::bad_program, mthd);
  const uint64_t total_blocks = std::max<uint64_t>(launch.blocks, 1);
  const uint64_t units = row->units(launch.arg_span());
  const uint64_t first = units_before(std::min(blocks.first, total_blocks), total_blocks, units);
  const uint64_t end = units_before(std::min(blocks.end, total_blocks), total_blocks, units);
  const Units part{first, end > first ? end - first : 0};
  const uint64_t start = ctx.clock.now_ns();
  EngineDeadline deadline(ctx, start);

  if (launch.kernel == cls::Kernel::spin) {
    if (!deadline.sleep(start, part.count)) return channel_fault(regs::ChannelError::timeout, mthd);
    return {};
  }

  auto mapped = map_buffers(ctx, launch, mthd);
  if (!mapped) return std::unexpected(mapped.error());
  row->run(launch.arg_span(), Buffers(*mapped), part);
  if (auto r = write_back(ctx, *mapped, mthd); !r) return r;
  if (!deadline.charge(start, part_cost_ns(ctx.cost, kernel_cost_ns(ctx.cost, launch), part.count, units)))
    return channel_fault(regs::ChannelError::timeout, mthd);
  return {};
}

namespace {

// A launch in slices of thread blocks, one slice per piece.
class KernelSlices final : public DividedWork {
 public:
  KernelSlices(const ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd, uint64_t slice_blocks,
               uint64_t next = 0)
      : ctx_(ctx), launch_(launch), mthd_(mthd), slice_(std::max<uint64_t>(slice_blocks, 1)), next_(next) {}

  MethodDone run_piece(std::optional<uint64_t> budget_ns) override {
    ctx_.engine_budget_ns = budget_ns;
    const uint64_t end = std::min(launch_.blocks, next_ + slice_);
    const BlockRange blocks{next_, end};
    next_ = end;
    return run_kernel_blocks(ctx_, launch_, mthd_, blocks);
  }
  bool finished() const override { return next_ >= launch_.blocks; }
  std::optional<WorkState> save_progress() const override {
    return encode_kernel_progress({.launch = launch_, .timed = false, .slice = slice_, .next = next_});
  }

 private:
  ChannelContext ctx_;
  KernelLaunch launch_;
  uint32_t mthd_;
  uint64_t slice_;
  uint64_t next_ = 0;
};

// A launch in timed pieces (a timed CHAN_SLICE): each piece runs units in
// chunks (PieceSizer) until it has taken the slice time, measured on the
// clock in real time and by the cost model in virtual time; a spin's
// pieces are its duration cut into slices of that time.
class KernelTimedPieces final : public DividedWork {
 public:
  KernelTimedPieces(const ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd,
                    std::shared_ptr<SliceMemory> memory, uint64_t next = 0)
      : ctx_(ctx),
        launch_(launch),
        mthd_(mthd),
        row_(find_kernel(launch.kernel)),
        units_(kernel_units(launch)),
        memory_(std::move(memory)),
        next_(next) {
    const SliceMemory::Learned* l = learned();
    if (l != nullptr && l->units == units_ && l->piece_units != 0) {
      first_chunk_ = l->piece_units;
      target_ns_ = std::max(target_ns_, l->target_ns);
      probing_ = false;
    }
  }

  MethodDone run_piece(std::optional<uint64_t> budget_ns) override {
    ctx_.engine_budget_ns = budget_ns;
    if (row_ == nullptr) return channel_fault(regs::ChannelError::bad_program, mthd_);
    const uint64_t start = ctx_.clock.now_ns();
    EngineDeadline deadline(ctx_, start);
    if (launch_.kernel == cls::Kernel::spin) {
      const uint64_t ns = std::min(units_ - next_, ctx_.slice_ns);
      next_ += ns;
      if (!deadline.sleep(start, ns)) return channel_fault(regs::ChannelError::timeout, mthd_);
      return {};
    }
    auto mapped = map_buffers(ctx_, launch_, mthd_);
    if (!mapped) return std::unexpected(mapped.error());
    const Buffers buffers(*mapped);
    const uint64_t whole_ns = kernel_cost_ns(ctx_.cost, launch_);
    const bool modeled = ctx_.clock.kind() == ClockKind::virtual_time;
    const auto [done, elapsed] = row_->run_until != nullptr
                                     ? run_pooled(buffers, whole_ns, modeled, start, deadline)
                                     : run_chunks(buffers, whole_ns, modeled, start, budget_ns, deadline);
    // The next piece (and the next such launch) starts with what this
    // piece's speed says fits its time.
    if (elapsed > 0) {
      first_chunk_ = std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<unsigned __int128>(done) * target_ns_ /
                                                                 elapsed));
      if (SliceMemory::Learned* l = learned()) *l = {units_, first_chunk_, target_ns_};
    }
    if (auto r = write_back(ctx_, *mapped, mthd_); !r) return r;
    if (!deadline.charge(start, part_cost_ns(ctx_.cost, whole_ns, done, units_)))
      return channel_fault(regs::ChannelError::timeout, mthd_);
    return {};
  }
  bool finished() const override { return next_ >= units_; }
  std::optional<WorkState> save_progress() const override {
    return encode_kernel_progress({.launch = launch_,
                                   .timed = true,
                                   .slice = ctx_.slice_ns,
                                   .on_demand = ctx_.slice_yield != nullptr,
                                   .next = next_});
  }

 private:
  // The modeled time of `count` units, without the fixed launch cost.
  uint64_t work_ns(uint64_t whole_ns, uint64_t count) const {
    const uint64_t work = whole_ns - std::min(whole_ns, ctx_.cost.launch_ns);
    return static_cast<uint64_t>(static_cast<unsigned __int128>(work) * count / std::max<uint64_t>(units_, 1));
  }

  struct PieceRun {
    uint64_t done = 0;     // units the piece ran
    uint64_t elapsed = 0;  // their time (real, or modeled without the launch's fixed cost)
  };

  // The piece as one job of the tile pool: its threads take tiles until
  // the piece's time (or the engine's deadline) is up, the modeled time of
  // the tiles taken in virtual time. A tile taken runs whole, so a piece
  // runs past its time by at most one tile's time. On demand (real time),
  // a piece past its time goes on until the host asks for the engine or
  // it reaches its longest (lone_ns): a VM alone runs its launch as one job.
  PieceRun run_pooled(const Buffers& buffers, uint64_t whole_ns, bool modeled, uint64_t start,
                      const EngineDeadline& deadline) {
    const uint64_t target = target_ns_;
    const uint64_t lone = lone_ns(target);
    const kernels::TileStop stop = [&](uint64_t taken) {
      if (deadline.expired()) return true;
      if (modeled) return work_ns(whole_ns, taken) >= target;
      const uint64_t elapsed = ctx_.clock.now_ns() - start;
      return elapsed >= target && (ctx_.yield_requested() || elapsed >= lone);
    };
    PieceRun r;
    r.done = row_->run_until(launch_.arg_span(), buffers, Units{next_, units_ - next_}, stop);
    next_ += r.done;
    r.elapsed = modeled ? work_ns(whole_ns, r.done) : ctx_.clock.now_ns() - start;
    return r;
  }

  // The longest an on-demand piece runs while no one asks for the engine:
  // SLICE_LONE_MAX_MS, within half of the engine time the piece may use.
  uint64_t lone_ns(uint64_t target) const {
    uint64_t lone = uint64_t{regs::pfifo::SLICE_LONE_MAX_MS} * NS_PER_MS;
    if (ctx_.engine_budget_ns) lone = std::min(lone, *ctx_.engine_budget_ns / 2);
    return std::max(lone, target);
  }

  // The piece in chunks (PieceSizer), each timed: the first one of the
  // launch sets the piece's floor.
  PieceRun run_chunks(const Buffers& buffers, uint64_t whole_ns, bool modeled, uint64_t start,
                      std::optional<uint64_t> budget_ns, const EngineDeadline& deadline) {
    PieceSizer sizer(target_ns_, first_chunk_);
    PieceRun r;
    for (;;) {
      r.elapsed = modeled ? work_ns(whole_ns, r.done) : ctx_.clock.now_ns() - start;
      if (probing_ && r.done != 0) {  // one block's units took `elapsed`: a floor for every piece
        probing_ = false;
        uint64_t floor = r.elapsed * row_->min_piece_per_chunk;
        if (budget_ns) floor = std::min(floor, *budget_ns / 2);
        target_ns_ = std::max(target_ns_, floor);
        sizer.set_target(target_ns_);
      }
      const uint64_t chunk = sizer.next(r.done, r.elapsed, units_ - next_);
      if (chunk == 0 || deadline.expired()) break;
      row_->run(launch_.arg_span(), buffers, Units{next_, chunk});
      next_ += chunk;
      r.done += chunk;
    }
    return r;
  }

  SliceMemory::Learned* learned() const {
    const auto k = static_cast<size_t>(launch_.kernel);
    return memory_ && k < memory_->by_kernel.size() ? &memory_->by_kernel[k] : nullptr;
  }

  ChannelContext ctx_;
  KernelLaunch launch_;
  uint32_t mthd_;
  const KernelRow* row_;
  uint64_t units_;
  std::shared_ptr<SliceMemory> memory_;
  uint64_t next_ = 0;                   // the next unit
  uint64_t target_ns_ = ctx_.slice_ns;  // a piece's time: the slice, or the floor its first chunk set
  bool probing_ = true;                 // the first chunk is one block's units, timed
  // A piece's first chunk: one block's units in the first piece, then what
  // the last piece's speed fits in the slice.
  uint64_t first_chunk_ = std::max<uint64_t>(units_ / std::max<uint64_t>(launch_.blocks, 1), 1);
};

}  // namespace

std::shared_ptr<DividedWork> slice_kernel(const ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd,
                                          uint32_t slice_blocks) {
  return std::make_shared<KernelSlices>(ctx, launch, mthd, slice_blocks);
}

std::shared_ptr<DividedWork> resume_kernel_work(const ChannelContext& ctx, const KernelProgress& p, uint32_t mthd,
                                                std::shared_ptr<SliceMemory> memory) {
  if (!p.timed) return std::make_shared<KernelSlices>(ctx, p.launch, mthd, p.slice, p.next);
  ChannelContext c = ctx;
  c.slice_ns = p.slice;
  c.slice_blocks = 0;
  if (!p.on_demand) c.slice_yield = nullptr;
  return std::make_shared<KernelTimedPieces>(c, p.launch, mthd, std::move(memory), p.next);
}

std::shared_ptr<DividedWork> slice_kernel_timed(const ChannelContext& ctx, const KernelLaunch& launch, uint32_t mthd,
                                                std::shared_ptr<SliceMemory> memory) {
  return std::make_shared<KernelTimedPieces>(ctx, launch, mthd, std::move(memory));
}

}  // namespace vgpu::gpu
