// SPDX-License-Identifier: GPL-2.0-or-later
// Running one channel for a slice: GPFIFO entries from GP_GET to GP_PUT,
// their push-buffer segments, and each method to the host class or to the
// object bound to its subchannel.
#include <algorithm>

#include "common/launch_trace.h"
#include "gpu/engines/device_work.h"
#include "gpu/host_class.h"
#include "gpu/pfifo.h"

namespace vgpu::gpu {

using namespace regs;
using pushbuf::Kind;

namespace {
constexpr uint64_t NS_PER_MS = 1'000'000;
std::unexpected<ChannelFault> fault(ChannelError code, uint64_t addr, uint32_t method = 0, uint32_t subch = 0) {
  return std::unexpected(ChannelFault{code, method, subch, addr, std::nullopt});
}
std::unexpected<ChannelFault> mmu_fault(const Fault& f) {
  return std::unexpected(ChannelFault{ChannelError::mmu_fault, 0, 0, f.va, f});
}
// A method's fault that names no address names its command's header.
std::unexpected<ChannelFault> command_fault(ChannelFault f, uint64_t command_va) {
  if (f.code != ChannelError::mmu_fault && f.addr == 0) f.addr = command_va;
  return std::unexpected(f);
}
}  // namespace

Pfifo::Ran Pfifo::run_slice(uint32_t chid, ChannelRun& run) {
  bool fetched = false;
  for (uint32_t budget = SLICE_METHODS; budget > 0;) {
    if (!run.in_segment) {
      if (fetched) return {};  // one GPFIFO entry per turn: round robin
      const uint32_t put = gp_put(run);
      if (put == run.gp_get) return {};
      if (put >= run.gp_entries) return fault(ChannelError::gpentry_invalid, put);
      if (!run.busy) {
        run.busy = true;
        run.busy_start_ns = d_.clock.now_ns();
      }
      if (auto r = fetch_entry(run); !r) return r;
      fetched = true;
      continue;
    }
    if (!run.command) {
      if (run.pos == run.segment_words) {
        finish_entry(run);
        continue;
      }
      const uint64_t header_va = run.segment_va + uint64_t{run.pos} * 4;
      auto header = segment_word(run, run.pos);
      if (!header) return mmu_fault(header.error());
      const pushbuf::Command cmd = pushbuf::decode(*header);
      if (cmd.kind == Kind::illegal) return fault(ChannelError::illegal_cmd, header_va, cmd.method, cmd.subch);
      if (cmd.kind == Kind::end_segment) {
        finish_entry(run);
        continue;
      }
      const uint32_t data_words = cmd.kind == Kind::immediate ? 0 : cmd.count;
      if (uint64_t{run.pos} + 1 + data_words > run.segment_words)
        return fault(ChannelError::illegal_cmd, header_va, cmd.method, cmd.subch);
      ++run.pos;
      if (cmd.kind == Kind::nop || pushbuf::methods(cmd) == 0) continue;
      run.command = cmd;
      run.command_header = *header;
      run.command_done = 0;
      run.command_va = header_va;
    }
    const pushbuf::Command& cmd = *run.command;
    if (cmd.kind == Kind::non_inc && run.command_done == 0 && cmd.count > 1) {
      auto words = execute_words(chid, run, cmd.subch, cmd.method);
      if (!words) return command_fault(words.error(), run.command_va);
      if (*words) {  // every word done at once
        run.pos += cmd.count;
        run.command.reset();
        budget -= std::min(budget, cmd.count);
        if (**words == Step::engine) {
          run.engine_wait = true;
          return {};
        }
        continue;
      }
    }
    const uint32_t method = pushbuf::method_of(cmd, run.command_done);
    uint32_t data = cmd.immediate;
    if (cmd.kind != Kind::immediate) {
      auto word = segment_word(run, run.pos);
      if (!word) return mmu_fault(word.error());
      data = *word;
    }
    auto step = execute(chid, run, cmd.subch, method, data);
    if (!step) return command_fault(step.error(), run.command_va);
    switch (*step) {
      case Step::blocked:
        run.parked_sem_epoch = sem_epoch_.load();
        run.parked_poll_round = poll_round_.load();
        return {};
      case Step::engine: run.engine_wait = true; return {};
      case Step::yield: advance(run); return {};
      case Step::done:
        advance(run);
        --budget;
        break;
    }
  }
  return {};
}

Pfifo::Ran Pfifo::fetch_entry(ChannelRun& run) {
  LaunchTrace::mark(LaunchPhase::gpfifo_fetch);
  const AccessContext& as = run.ctx->as;
  const uint64_t entry_va = run.gp_base + uint64_t{run.gp_get} * ramfc::GP_ENTRY_BYTES;
  fmt::gp::Entry e{};
  if (auto r = d_.mmu.read(as, entry_va, &e, sizeof e); !r) return mmu_fault(r.error());
  const uint32_t length = fmt::gp::Length::get(e.w1);
  if (length == 0) {  // control entry
    if (fmt::gp::Opcode::get(e.w1) != uint32_t(fmt::gp::ControlOp::nop))
      return fault(ChannelError::gpentry_invalid, entry_va);
    finish_entry(run);
    return {};
  }
  const uint64_t va = fmt::gp::va(e);
  const uint64_t bytes = uint64_t{length} * 4;
  if (va + bytes > fmt::VA_LIMIT || va + bytes - 1 > as.limit) return fault(ChannelError::gpentry_invalid, va);
  run.in_segment = true;
  run.segment_va = va;
  run.segment_words = length;
  run.window.clear();
  run.window_start = 0;
  run.pos = 0;
  run.command.reset();
  return {};
}

Walk<uint32_t> Pfifo::segment_word(ChannelRun& run, uint32_t index) {
  if (index < run.window_start || index - run.window_start >= run.window.size()) {
    const uint32_t n = std::min(SEGMENT_WINDOW_WORDS, run.segment_words - index);
    run.window.resize(n);
    if (auto r = d_.mmu.read(run.ctx->as, run.segment_va + uint64_t{index} * 4, run.window.data(), uint64_t{n} * 4); !r)
      return std::unexpected(r.error());
    run.window_start = index;
  }
  return run.window[index - run.window_start];
}

void Pfifo::finish_entry(ChannelRun& run) {
  run.in_segment = false;
  run.command.reset();
  run.window.clear();
  run.gp_get = (run.gp_get + 1) % run.gp_entries;
  (void)d_.vram.write32(run.userd + userd::GP_GET, run.gp_get);
  (void)d_.vram.write32(run.inst + ramfc::GP_GET, run.gp_get);
}

void Pfifo::advance(ChannelRun& run) {
  if (!run.command) return;
  if (run.command->kind != Kind::immediate) ++run.pos;
  if (++run.command_done == pushbuf::methods(*run.command)) run.command.reset();
}

std::optional<std::span<const uint32_t>> Pfifo::segment_words(ChannelRun& run, uint32_t index, uint32_t count) {
  if (count > SEGMENT_WINDOW_WORDS || uint64_t{index} + count > run.segment_words) return std::nullopt;
  if (index < run.window_start || uint64_t{index} + count > uint64_t{run.window_start} + run.window.size()) {
    if (!segment_word(run, index)) return std::nullopt;  // the word-by-word path meets the fault
    if (uint64_t{index} + count > uint64_t{run.window_start} + run.window.size()) return std::nullopt;
  }
  return std::span<const uint32_t>(run.window).subspan(index - run.window_start, count);
}

// A class method's non-incrementing run of data words at once, where the
// object can (ClassObject::method_words): done (or its engine work
// started), or nullopt when the words go one by one (nothing was done).
std::expected<std::optional<Pfifo::Step>, ChannelFault> Pfifo::execute_words(uint32_t chid, ChannelRun& run,
                                                                             uint32_t subch, uint32_t method) {
  if (method < fmt::mthd::HOST_METHOD_END) return std::nullopt;
  ClassObject* object = run.objects[subch].get();
  if (!object) return std::nullopt;
  const uint32_t count = run.command->count;
  // A run that may start work (LAUNCH_USER) is one operation, as a method
  // is (before the words: looking for the release after them may move the
  // segment's window).
  std::optional<uint64_t> budget;
  const bool may_start = object->may_start_work(method);
  if (may_start) {
    auto b = begin_operation(chid, run, *object, method, run.pos + count);
    if (!b) return fault(ChannelError::timeout, 0, method, subch);
    budget = *b;
  }
  const auto words = segment_words(run, run.pos, count);
  if (!words) {
    run.ctx->following_release.reset();
    run.following.reset();
    return std::nullopt;
  }
  if (may_start) LaunchTrace::mark(LaunchPhase::launch_read);
  auto outcome = object->method_words(*run.ctx, method, *words);
  run.ctx->following_release.reset();
  if (!outcome) {
    run.following.reset();
    return std::nullopt;
  }
  if (*outcome && **outcome && !may_start) return fault(ChannelError::illegal_method, 0, method, subch);
  auto step = start_method_work(chid, run, std::move(*outcome), budget, subch, method);
  if (!step) return std::unexpected(step.error());
  return *step;
}

// What a method that may start work runs with: what is left of the
// entry's engine time, the channel's slice size and watchdog, and (with a
// device's fences) the release whose header is at `next`; the watchdog
// counts from here, a new operation.
std::expected<std::optional<uint64_t>, ChannelFault> Pfifo::begin_operation(uint32_t chid, ChannelRun& run,
                                                                            const ClassObject& object, uint32_t method,
                                                                            std::optional<uint32_t> next) {
  run.op_engine_ns = 0;
  auto budget = engine_budget(chid, run);
  if (!budget) return budget;
  run.ctx->engine_budget_ns = *budget;
  const uint32_t slice = chan_slice_[chid].load();
  const bool timed = pfifo::ChanSliceTimed::get(slice);
  run.ctx->slice_blocks = timed ? 0 : pfifo::ChanSliceBlocks::get(slice);
  run.ctx->slice_ns = timed ? uint64_t{pfifo::ChanSliceBlocks::get(slice)} * 1000 : 0;
  run.ctx->slice_yield = timed && pfifo::ChanSliceOnDemand::get(slice) ? &slice_yield_ : nullptr;
  run.ctx->watchdog_ns = uint64_t{chan_watchdog_[chid].load()} * NS_PER_MS;
  run.released_early.reset();
  run.ctx->following_release = d_.device && d_.device->fences && next && object.may_start_work(method)
                                   ? release_after(chid, run, *next)
                                   : std::nullopt;
  run.following = run.ctx->following_release;
  return budget;
}

Pfifo::Stepped Pfifo::execute(uint32_t chid, ChannelRun& run, uint32_t subch, uint32_t method, uint32_t data) {
  if (method < fmt::mthd::HOST_METHOD_END) {
    auto r = host_method(HostCall{run, d_.vram, d_.tlb_invalidate, subch, method, data, &device_releases_});
    if (!r) return std::unexpected(r.error());
    static constexpr Step STEPS[] = {Step::done, Step::blocked, Step::yield};
    return STEPS[static_cast<size_t>(*r)];
  }
  ClassObject* object = run.objects[subch].get();
  if (!object) return fault(ChannelError::empty_subchannel, 0, method, subch);
  // The release after the method: past its data word, when it is the
  // command's last method.
  const pushbuf::Command& cmd = *run.command;
  std::optional<uint32_t> next;
  if (run.command_done + 1 == pushbuf::methods(cmd)) next = run.pos + (cmd.kind == Kind::immediate ? 0 : 1);
  auto budget = begin_operation(chid, run, *object, method, next);
  if (!budget) return fault(ChannelError::timeout, 0, method, subch);
  if (LaunchTrace::enabled() && object->may_start_work(method)) LaunchTrace::mark(LaunchPhase::launch_read);
  auto outcome = object->method(*run.ctx, method, data);
  run.ctx->following_release.reset();
  return start_method_work(chid, run, std::move(outcome), *budget, subch, method);
}

// A method's outcome: a fault, done, or its engine work started.
Pfifo::Stepped Pfifo::start_method_work(uint32_t chid, ChannelRun& run, MethodOutcome outcome,
                                        std::optional<uint64_t> budget, uint32_t subch, uint32_t method) {
  if (!outcome) {
    ChannelFault f = outcome.error();
    f.method = method;
    f.subch = subch;
    return std::unexpected(f);
  }
  if (!*outcome) return Step::done;
  LaunchTrace::mark(LaunchPhase::launch_built);
  EngineWork work = std::move(**outcome);
  const auto engine = static_cast<size_t>(work.engine);
  if (engine >= engines_.size() || !engines_[engine]) return fault(ChannelError::illegal_method, 0, method, subch);
  if (work.divided) {
    run.divided = std::move(work.divided);
    run.divided_engine = work.engine;
    submit_piece(chid, run, budget);
    return Step::engine;
  }
  start_engine_job(chid, run.epoch, work.engine, std::move(work.run), work.brief);
  return Step::engine;
}

std::optional<FollowingRelease> Pfifo::release_after(uint32_t chid, ChannelRun& run, uint32_t next) {
  const auto words = segment_words(run, next, 1 + SEMAPHORE_METHODS);
  if (!words) return std::nullopt;
  const pushbuf::Command sem = pushbuf::decode((*words)[0]);
  if (sem.kind != Kind::inc || sem.method != cls::host::SEMAPHORE_A || sem.count < SEMAPHORE_METHODS)
    return std::nullopt;
  auto release = one_word_release(words->subspan<1, SEMAPHORE_METHODS>());
  if (!release) return std::nullopt;
  release->token = ++next_release_token_;
  release->written = &release_written_[chid];
  return release;
}

void Pfifo::start_engine_job(uint32_t chid, uint64_t epoch, EngineId engine, std::function<MethodDone()> work,
                             bool brief) {
  {
    std::lock_guard l(d_.mutex);
    channels_.engine_started(chid, epoch);
  }
  auto job = [this, chid, epoch, run_work = std::move(work)] {
    engine_job_start_ns_[chid].store(d_.clock.now_ns());
    post_engine_result(chid, epoch, run_engine_work(d_.log, chid, run_work));
  };
  EngineThread& thread = *engines_[static_cast<size_t>(engine)];
  // Brief work runs here when the engine is idle: the same job, the same
  // result posted, in the same order (only this thread submits work).
  if (!brief || !thread.run_here_if_idle(job)) thread.submit(std::move(job));
}

std::expected<std::optional<uint64_t>, ChannelFault> Pfifo::engine_budget(uint32_t chid, const ChannelRun& run) const {
  std::optional<uint64_t> budget;
  if (const uint64_t limit_ns = uint64_t{engine_timeout_ms_.load()} * NS_PER_MS; limit_ns != 0) budget = limit_ns;
  if (const uint64_t watchdog_ns = uint64_t{chan_watchdog_[chid].load()} * NS_PER_MS; watchdog_ns != 0) {
    // Spent at a piece boundary: the work's next piece gets no time and
    // ends the operation itself (a user launch with its report).
    budget = run.op_engine_ns >= watchdog_ns ? 0
                                             : std::min(budget.value_or(watchdog_ns), watchdog_ns - run.op_engine_ns);
  }
  return budget;
}

void Pfifo::submit_piece(uint32_t chid, ChannelRun& run, std::optional<uint64_t> budget_ns) {
  run.engine_wait = true;
  start_engine_job(
      chid, run.epoch, run.divided_engine, [work = run.divided, budget_ns] { return work->run_piece(budget_ns); },
      false);
}

}  // namespace vgpu::gpu
