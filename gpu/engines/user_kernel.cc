// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/user_kernel.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "gpu/engines/device_work.h"
#include "gpu/engines/engine_deadline.h"
#include "gpu/engines/method_table.h"
#include "gpu/engines/module_cache.h"
#include "gpu/ptx/interpreter.h"

namespace vgpu::gpu {

namespace {

using cls::PtxStatus;
using regs::ChannelError;

// Global memory as a user kernel reaches it: the channel's MMU, VRAM only.
class MmuMemory final : public ptx::GlobalMemory {
 public:
  explicit MmuMemory(ChannelContext& ctx) : ctx_(ctx) {}
  // The kernel's stores are done when the piece returns: each page it
  // wrote was a store in flight from its first store until now (no upload
  // of it meanwhile, docs/migration.md §8), and goes into the dirty log
  // now, after the writes (§5).
  ~MmuMemory() override {
    Vram& vram = ctx_.mmu.vram();
    for (uint64_t page : written_) vram.end_host_write(page * DirtyLog::PAGE, DirtyLog::PAGE);
  }
  MmuMemory(const MmuMemory&) = delete;
  MmuMemory& operator=(const MmuMemory&) = delete;

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
    if (write)
      note_written(vram, t->phys, bytes);
    else
      vram.host_access(t->phys, bytes, false);
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
  // A page's first store begins its write (the page made valid on the
  // host); it ends with the piece.
  void note_written(const Vram& vram, uint64_t phys, uint32_t bytes) {
    const uint64_t first = phys / DirtyLog::PAGE, last = (phys + bytes - 1) / DirtyLog::PAGE;
    if (first == last_page_ && last == last_page_) return;  // the common case: the page just written
    for (uint64_t p = first; p <= last; ++p)
      if (written_.insert(p).second) vram.begin_host_write(p * DirtyLog::PAGE, DirtyLog::PAGE);
    last_page_ = last;
  }
  ChannelContext& ctx_;
  std::optional<Fault> fault_;
  std::unordered_set<uint64_t> written_;  // VRAM page numbers, bounded by the VRAM's pages
  uint64_t last_page_ = ~uint64_t{0};
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
  if (ctx.device != nullptr && ctx.device->device.runs_user_kernels())
    if (auto why = load_on_device(ctx, l.slot, text, l.data_va))
      return report(PtxStatus::unsupported, "the device refused the module: " + *why);
  slots.source_bytes = slots.source_bytes - slot.source_bytes + text.size();
  const uint64_t source_bytes = text.size();
  slot = ModuleSlot{.module = *parsed,
                    .data_va = l.data_va,
                    .source_bytes = source_bytes,
                    .text = std::make_shared<const std::string>(std::move(text))};
  cls::PtxReport ok = make_report(PtxStatus::ok, 0, 0, "loaded");
  ok.data_bytes = m.data_bytes();
  ok.entries = static_cast<uint32_t>(m.entries().size());
  return write_report(ctx, l.report_va, ok, slots, mthd);
}

// What ends a run of a launch: the engine budget (PFIFO's: max-gpu-ms for
// the piece, within what is left of the channel's watchdog), or (a piece)
// its time. Time is the clock's in
// real time and the modeled cost of the instructions run in virtual time.
class RunBounds {
 public:
  RunBounds(ChannelContext& ctx, const ptx::LaunchRun& run, uint64_t start_ns, uint64_t piece_ns)
      : ctx_(ctx),
        run_(run),
        start_ns_(start_ns),
        start_instructions_(run.stats().warp_instructions),
        rate_(std::max(ctx.cost.warp_instructions_per_ns, 1e-9)),
        virtual_(ctx.clock.kind() == ClockKind::virtual_time),
        piece_ns_(piece_ns) {}

  uint64_t elapsed_ns() const {
    if (!virtual_) return ctx_.clock.now_ns() - start_ns_;
    return static_cast<uint64_t>(static_cast<double>(instructions()) / rate_);
  }
  // Warp instructions of this run: counted by polls while it runs (the
  // run's counters reach LaunchRun::stats when it returns), exact after.
  uint64_t instructions() const {
    const uint64_t exact = run_.stats().warp_instructions - start_instructions_;
    return exact != 0 ? exact : polls_ * USER_POLL_EVERY;
  }
  void polled() { ++polls_; }
  // The modeled cost of this run, charged to the clock at its end.
  uint64_t cost_ns() const {
    return ctx_.cost.launch_ns + static_cast<uint64_t>(static_cast<double>(instructions()) / rate_);
  }
  bool over_budget() const { return ctx_.engine_budget_ns && elapsed_ns() >= *ctx_.engine_budget_ns; }
  bool piece_over() const { return piece_ns_ != 0 && elapsed_ns() >= piece_ns_; }

 private:
  ChannelContext& ctx_;
  const ptx::LaunchRun& run_;
  uint64_t start_ns_, start_instructions_;
  double rate_;
  bool virtual_;
  uint64_t piece_ns_;
  uint64_t polls_ = 0;
};

// A failed run: the report, then the channel's error.
MethodDone launch_failed(ChannelContext& ctx, const UserLaunch& l, uint32_t mthd, const ptx::ExecError& e,
                         const MmuMemory* memory, std::string_view timeout_message) {
  const auto* map = std::ranges::find(EXEC_ERRORS, e.status, &ExecMapping::exec);
  const ExecMapping m = map != std::end(EXEC_ERRORS)
                            ? *map
                            : ExecMapping{e.status, ChannelError::kernel_error, PtxStatus::illegal};
  const std::string message = e.status == ptx::ExecStatus::timeout ? std::string(timeout_message) : e.message;
  if (auto w = write_report(ctx, l.report_va, make_report(m.report, e.line, e.va, message), *l.slots, mthd); !w)
    return w;
  if (m.error == ChannelError::mmu_fault && memory != nullptr && memory->fault())
    return mmu_channel_fault(mthd, *memory->fault());
  const ChannelError code = m.error == ChannelError::mmu_fault ? ChannelError::kernel_error : m.error;
  return channel_fault(code, mthd, e.va);
}

ptx::LaunchConfig exec_config(const UserLaunch& l) {
  return ptx::LaunchConfig{
      .entry = l.entry,
      .grid = {l.grid[0], l.grid[1], l.grid[2]},
      .block = {l.block[0], l.block[1], l.block[2]},
      .dynamic_shared_bytes = l.shared_bytes,
      .params = l.params,
      .data_va = l.data_va,
  };
}

uint64_t grid_blocks(const UserLaunch& l) { return uint64_t{l.grid[0]} * l.grid[1] * l.grid[2]; }

}  // namespace

UserLaunchWork::UserLaunchWork(const ChannelContext& ctx, UserLaunch launch, uint32_t mthd, const UserPieces& pieces)
    : ctx_(ctx), launch_(std::move(launch)), mthd_(mthd), pieces_(pieces) {}

UserLaunchWork::~UserLaunchWork() = default;

bool UserLaunchWork::finished() const { return done_; }

uint64_t UserLaunchWork::state_bytes() const { return run_ ? run_->state_bytes() : 0; }

MethodDone UserLaunchWork::run_piece(std::optional<uint64_t> budget_ns) {
  return run_for(pieces_.slice_blocks == 0 ? 0 : pieces_.piece_ns, budget_ns);
}

// One piece: from where the last one stopped until the launch finishes, it
// ran `piece_ns` (0: no bound) or `slice_blocks` more blocks, or a bound
// ends it (timeout). The block state stays in run_ between pieces.
MethodDone UserLaunchWork::run_for(uint64_t piece_ns, std::optional<uint64_t> budget_ns) {
  ctx_.engine_budget_ns = budget_ns;
  const uint64_t start = ctx_.clock.now_ns();
  if (!run_) {
    const ptx::ExecLimits limits{.max_shared_bytes = cls::compute::MAX_SHARED_BYTES};
    auto started = ptx::LaunchRun::start(*launch_.module, exec_config(launch_), 0, grid_blocks(launch_), limits);
    if (!started) return finish(launch_failed(ctx_, launch_, mthd_, started.error(), nullptr, ""));
    run_ = std::move(*started);
  }
  if (!first_budget_) first_budget_ = budget_ns;
  RunBounds bounds(ctx_, *run_, start, piece_ns);
  ptx::ExecControl control;
  control.poll_every = USER_POLL_EVERY;
  control.keep_going = [&] {
    bounds.polled();
    return !bounds.over_budget();
  };
  control.yield_now = [&] { return bounds.piece_over(); };
  const uint64_t stop = pieces_.slice_blocks == 0 ? ~uint64_t{0} : run_->next_block() + pieces_.slice_blocks;
  MmuMemory memory(ctx_);
  auto ran = run_->run(memory, control, stop);
  EngineDeadline deadline(ctx_, start);
  spent_ns_ += bounds.elapsed_ns();
  if (!ran) {
    const bool watchdog = ran.error().status == ptx::ExecStatus::timeout && by_watchdog(budget_ns);
    const std::string why = watchdog ? "ended by the channel's watchdog (watchdog-ms) after " +
                                           std::to_string(pieces_.watchdog_ns / 1'000'000) + " ms"
                                     : "the launch ran past its time bound";
    if (ran.error().status == ptx::ExecStatus::timeout && !watchdog && budget_ns)
      (void)deadline.charge(start, *budget_ns);
    return finish(launch_failed(ctx_, launch_, mthd_, ran.error(), &memory, why));
  }
  if (!deadline.charge(start, bounds.cost_ns())) return finish(channel_fault(ChannelError::timeout, mthd_));
  if (*ran == ptx::LaunchRun::State::finished) return finish({});
  return {};
}

// PFIFO gives each piece min(max-gpu-ms, what is left of the watchdog),
// and 0 once the watchdog is spent at a piece boundary. The first piece's
// budget is min(max-gpu-ms, watchdog): a later budget below it, or a
// watchdog no longer than max-gpu-ms, is the watchdog's.
bool UserLaunchWork::by_watchdog(std::optional<uint64_t> budget_ns) const {
  if (pieces_.watchdog_ns == 0 || !budget_ns) return false;
  if (*budget_ns == 0) return true;
  const std::optional<uint64_t> first = first_budget_.value_or(std::nullopt);
  return !first || *budget_ns < *first || *first >= pieces_.watchdog_ns;
}

MethodDone UserLaunchWork::finish(MethodDone result) {
  done_ = true;
  run_.reset();  // the kept state goes at once
  return result;
}


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
  UserPieces pieces{.slice_blocks = slice_blocks, .watchdog_ns = e.watchdog_ns};
  // A timed CHAN_SLICE (§10.5, slice-blocks auto): pieces of the slice's
  // time, ending inside a block if need be, with no bound on blocks.
  if (e.slice_ns != 0 && slice_blocks == 0) {
    pieces.slice_blocks = UNBOUNDED_BLOCKS;
    pieces.piece_ns = e.slice_ns;
  }
  return user_launch_work(e, std::move(launch), mthd, pieces);
}

EngineWork user_launch_work(const ChannelContext& e, UserLaunch launch, uint32_t mthd, const UserPieces& pieces) {
  // A device that runs user kernels runs the launch whole (it slices it
  // itself, in pieces of the channel's slice blocks).
  if (e.device != nullptr && e.device->device.runs_user_kernels())
    return EngineWork{.engine = EngineId::compute, .run = [ctx = e, launch = std::move(launch), mthd]() mutable {
                        return user_launch_on_device(ctx, launch, mthd);
                      }};
  auto work = std::make_shared<UserLaunchWork>(e, std::move(launch), mthd, pieces);
  if (pieces.slice_blocks != 0) return EngineWork{.engine = EngineId::compute, .run = {}, .divided = std::move(work)};
  // Whole: one piece with no time bound of its own (the budget and the watchdog still end it).
  return EngineWork{.engine = EngineId::compute,
                    .run = [work, budget = e.engine_budget_ns] { return work->run_for(0, budget); }};
}

}  // namespace vgpu::gpu
