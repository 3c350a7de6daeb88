// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/user_kernel.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/method_table.h"
#include "gpu/engines/module_cache.h"
#include "gpu/engines/piece_sizer.h"
#include "gpu/ptx/interpreter.h"

namespace vgpu::gpu {

namespace {

using cls::PtxStatus;
using regs::ChannelError;

// ext: how long one user kernel operation may run when no ENGINE_TIMEOUT
// bounds it (max-gpu-ms 0): a watchdog for runaways, generous for real work.
constexpr uint64_t USER_KERNEL_WATCHDOG_NS = 60'000'000'000;

// Global memory as a user kernel reaches it: the channel's MMU, VRAM only.
class MmuMemory final : public ptx::GlobalMemory {
 public:
  explicit MmuMemory(ChannelContext& ctx) : ctx_(ctx) {}

  std::expected<std::byte*, ptx::MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
    auto t = ctx_.mmu.translate(ctx_.as, va, write);
    if (!t) {
      fault_ = t.error();
      return std::unexpected(ptx::MemoryFault{va, write, fault_reason(t.error().reason)});
    }
    Vram& vram = ctx_.mmu.vram();
    if (t->sysmem || !vram.contains(t->phys, bytes)) {
      fault_ = Fault{.reason = regs::FaultReason::dma_error,
                     .va = va,
                     .write = write,
                     .unit = ctx_.as.unit,
                     .inst = ctx_.as.inst,
                     .chid = ctx_.as.chid};
      return std::unexpected(ptx::MemoryFault{va, write, "system memory is not reachable from user kernels"});
    }
    vram.host_access(t->phys, bytes, write);
    return vram.data() + t->phys;
  }
  const std::optional<Fault>& fault() const { return fault_; }

 private:
  static std::string fault_reason(regs::FaultReason r) {
    switch (r) {
      case regs::FaultReason::pt_not_present: return "page table not present";
      case regs::FaultReason::pt_too_short: return "page table too short";
      case regs::FaultReason::page_not_present: return "page not present";
      case regs::FaultReason::vm_limit_exceeded: return "beyond the address space limit";
      case regs::FaultReason::page_read_only: return "page is read-only";
      default: return "translation fault";
    }
  }
  ChannelContext& ctx_;
  std::optional<Fault> fault_;
};

struct ExecMapping {
  ptx::ExecStatus exec;
  ChannelError error;
  PtxStatus report;
};
constexpr ExecMapping EXEC_ERRORS[] = {
    {ptx::ExecStatus::mmu_fault, ChannelError::mmu_fault, PtxStatus::mmu_fault},
    {ptx::ExecStatus::misaligned, ChannelError::kernel_error, PtxStatus::misaligned},
    {ptx::ExecStatus::trap, ChannelError::kernel_error, PtxStatus::trap},
    {ptx::ExecStatus::timeout, ChannelError::timeout, PtxStatus::timeout},
    {ptx::ExecStatus::resource, ChannelError::kernel_error, PtxStatus::resource},
    {ptx::ExecStatus::bad_launch, ChannelError::bad_argument, PtxStatus::resource},
    {ptx::ExecStatus::illegal, ChannelError::kernel_error, PtxStatus::illegal},
};

PtxStatus parse_report_status(ptx::ParseStatus s) {
  switch (s) {
    case ptx::ParseStatus::ok: return PtxStatus::ok;
    case ptx::ParseStatus::parse_error: return PtxStatus::parse_error;
    case ptx::ParseStatus::unsupported: return PtxStatus::unsupported;
    case ptx::ParseStatus::too_large: return PtxStatus::too_large;
    case ptx::ParseStatus::bad_version: return PtxStatus::bad_version;
  }
  return PtxStatus::parse_error;
}


MethodDone load(ChannelContext& ctx, ModuleSlots& slots, const ModuleLoad& l, uint32_t mthd) {
  const uint64_t start = ctx.clock.now_ns();
  const auto report = [&](PtxStatus st, std::string_view text, uint32_t line = 0) {
    return write_report(ctx, l.report_va, make_report(st, line, 0, text), slots, mthd);
  };
  if (l.slot >= slots.slots.size()) return report(PtxStatus::bad_slot, "module slot out of range");
  if (l.source_bytes == 0) return report(PtxStatus::parse_error, "empty module");
  if (l.source_bytes > cls::compute::MAX_MODULE_BYTES) return report(PtxStatus::too_large, "module text too large");
  ModuleSlot& slot = slots.slots[l.slot];
  if (slots.source_bytes - slot.source_bytes + l.source_bytes > ModuleSlots::MAX_SOURCE_BYTES)
    return report(PtxStatus::too_large, "the channel's modules would exceed 8 MiB of text");

  std::string text(l.source_bytes, '\0');
  if (auto r = ctx.mmu.read(ctx.as, l.source_va, text.data(), text.size()); !r)
    return mmu_channel_fault(mthd, r.error());
  if (const size_t nul = text.find('\0'); nul != std::string::npos) text.resize(nul);  // a C string's terminator

  auto parsed = ctx.modules != nullptr ? ctx.modules->get(text) : ptx::parse_module(text);
  ctx.clock.charge(start, ctx.cost.launch_ns);
  if (!parsed) return report(parse_report_status(parsed.error().status), parsed.error().message, parsed.error().line);
  const ptx::Module& m = **parsed;
  if (m.data_bytes() > l.data_bytes) {
    cls::PtxReport r = make_report(PtxStatus::data_too_small, 0, 0,
                                   "the data segment is smaller than the module's variables");
    r.data_bytes = m.data_bytes();
    return write_report(ctx, l.report_va, r, slots, mthd);
  }
  if (m.data_bytes() > 0) {
    const std::vector<std::byte> init = m.initial_data();
    if (auto r = ctx.mmu.write(ctx.as, l.data_va, init.data(), init.size()); !r)
      return mmu_channel_fault(mthd, r.error());
  }
  slots.source_bytes = slots.source_bytes - slot.source_bytes + text.size();
  slot = ModuleSlot{.module = *parsed, .data_va = l.data_va, .source_bytes = text.size()};
  cls::PtxReport ok = make_report(PtxStatus::ok, 0, 0, "loaded");
  ok.data_bytes = m.data_bytes();
  ok.entries = static_cast<uint32_t>(m.entries().size());
  return write_report(ctx, l.report_va, ok, slots, mthd);
}

// Blocks [first, end) of a launch.
MethodDone run_part(ChannelContext& ctx, const UserLaunch& l, uint32_t mthd, uint64_t first, uint64_t end) {
  const uint64_t start = ctx.clock.now_ns();
  ChannelContext bounded = ctx;
  if (!bounded.engine_budget_ns) bounded.engine_budget_ns = USER_KERNEL_WATCHDOG_NS;
  EngineDeadline deadline(bounded, start);
  const uint64_t budget = *bounded.engine_budget_ns;
  const double rate = std::max(ctx.cost.warp_instructions_per_ns, 1e-9);

  ptx::ExecControl control;
  uint64_t polls = 0;
  const bool virtual_time = ctx.clock.kind() == ClockKind::virtual_time;
  control.keep_going = [&] {
    ++polls;
    if (virtual_time) return static_cast<double>(polls) * control.poll_every / rate <= static_cast<double>(budget);
    return !deadline.expired();
  };
  const ptx::LaunchConfig config{
      .entry = l.entry,
      .grid = {l.grid[0], l.grid[1], l.grid[2]},
      .block = {l.block[0], l.block[1], l.block[2]},
      .dynamic_shared_bytes = l.shared_bytes,
      .params = l.params,
      .data_va = l.data_va,
  };
  MmuMemory memory(ctx);
  const ptx::ExecLimits limits{.max_shared_bytes = cls::compute::MAX_SHARED_BYTES};
  auto ran = ptx::run_blocks(*l.module, config, memory, first, end, limits, control);
  if (!ran) {
    const ptx::ExecError& e = ran.error();
    const auto* map = std::ranges::find(EXEC_ERRORS, e.status, &ExecMapping::exec);
    const ExecMapping m = map != std::end(EXEC_ERRORS)
                              ? *map
                              : ExecMapping{e.status, ChannelError::kernel_error, PtxStatus::illegal};
    std::string message = e.message;
    if (e.status == ptx::ExecStatus::timeout) message = "the launch ran past its time bound";
    if (auto w = write_report(ctx, l.report_va, make_report(m.report, e.line, e.va, message), *l.slots, mthd); !w)
      return w;
    if (m.error == ChannelError::mmu_fault && memory.fault()) return mmu_channel_fault(mthd, *memory.fault());
    const ChannelError code = m.error == ChannelError::mmu_fault ? ChannelError::kernel_error : m.error;
    if (code == ChannelError::timeout) (void)deadline.charge(start, budget);
    return channel_fault(code, mthd, e.va);
  }
  const auto cost = ctx.cost.launch_ns + static_cast<uint64_t>(static_cast<double>(ran->warp_instructions) / rate);
  if (!deadline.charge(start, cost)) return channel_fault(ChannelError::timeout, mthd);
  return {};
}

uint64_t grid_blocks(const UserLaunch& l) { return uint64_t{l.grid[0]} * l.grid[1] * l.grid[2]; }

// A launch in slices of thread blocks, one slice per piece (§10.5).
class UserSlices final : public DividedWork {
 public:
  UserSlices(const ChannelContext& ctx, UserLaunch launch, uint32_t mthd, uint32_t slice_blocks)
      : ctx_(ctx), launch_(std::move(launch)), mthd_(mthd), slice_(std::max<uint32_t>(slice_blocks, 1)) {}

  MethodDone run_piece(std::optional<uint64_t> budget_ns) override {
    ctx_.engine_budget_ns = budget_ns;
    if (ctx_.slice_ns != 0) return run_timed_piece();
    const uint64_t end = std::min(grid_blocks(launch_), next_ + slice_);
    const uint64_t first = next_;
    next_ = end;
    return run_part(ctx_, launch_, mthd_, first, end);
  }
  bool finished() const override { return next_ >= grid_blocks(launch_); }

 private:
  // A timed CHAN_SLICE: blocks in chunks (PieceSizer, one block first)
  // until the piece has taken the slice time on the clock.
  MethodDone run_timed_piece() {
    const uint64_t start = ctx_.clock.now_ns();
    const std::optional<uint64_t> budget = ctx_.engine_budget_ns;
    const PieceSizer sizer(ctx_.slice_ns, first_chunk_);
    for (uint64_t done = 0;;) {
      const uint64_t elapsed = ctx_.clock.now_ns() - start;
      const uint64_t chunk = sizer.next(done, elapsed, grid_blocks(launch_) - next_);
      if (chunk == 0) {  // the next piece starts with what this one's speed fits in the slice
        if (elapsed > 0) first_chunk_ = std::max<uint64_t>(1, done * ctx_.slice_ns / elapsed);
        return {};
      }
      if (budget) {  // what is left of the piece's budget
        const uint64_t used = ctx_.clock.now_ns() - start;
        if (used >= *budget) return channel_fault(ChannelError::timeout, mthd_);
        ctx_.engine_budget_ns = *budget - used;
      }
      if (auto r = run_part(ctx_, launch_, mthd_, next_, next_ + chunk); !r) return r;
      next_ += chunk;
      done += chunk;
    }
  }

  ChannelContext ctx_;
  UserLaunch launch_;
  uint32_t mthd_;
  uint64_t slice_;
  uint64_t next_ = 0;
  uint64_t first_chunk_ = 1;  // timed: a piece's first chunk of blocks
};

}  // namespace

cls::PtxReport make_report(cls::PtxStatus status, uint32_t line, uint64_t addr, std::string_view message) {
  cls::PtxReport r{};
  r.status = static_cast<uint32_t>(status);
  r.line = line;
  r.addr = addr;
  const size_t n = std::min(message.size(), sizeof(r.message) - 1);
  std::memcpy(r.message, message.data(), n);
  return r;
}

MethodDone write_report(ChannelContext& ctx, uint64_t va, cls::PtxReport report, ModuleSlots& slots, uint32_t mthd) {
  report.sequence = slots.sequence.fetch_add(1, std::memory_order_relaxed) + 1;
  if (va == 0) return {};
  if (auto r = ctx.mmu.write(ctx.as, va, &report, sizeof(report)); !r) return mmu_channel_fault(mthd, r.error());
  return {};
}

EngineWork load_module_work(const ChannelContext& ctx, std::shared_ptr<ModuleSlots> slots, const ModuleLoad& load_req,
                            uint32_t mthd) {
  return EngineWork{
      .engine = EngineId::compute,
      .run = [e = ctx, slots = std::move(slots), load_req, mthd]() mutable { return load(e, *slots, load_req, mthd); },
  };
}

EngineWork user_launch_work(const ChannelContext& e, UserLaunch launch, uint32_t mthd, uint32_t slice_blocks) {
  if ((slice_blocks != 0 && grid_blocks(launch) > slice_blocks) || (e.slice_ns != 0 && grid_blocks(launch) > 1))
    return EngineWork{.engine = EngineId::compute,
                      .run = {},
                      .divided = std::make_shared<UserSlices>(e, std::move(launch), mthd, slice_blocks)};
  return EngineWork{
      .engine = EngineId::compute,
      .run = [ctx = e, launch = std::move(launch),
              mthd]() mutable { return run_part(ctx, launch, mthd, 0, grid_blocks(launch)); },
  };
}

}  // namespace vgpu::gpu
