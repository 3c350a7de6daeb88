// SPDX-License-Identifier: GPL-2.0-or-later
// PFIFO: the service thread, channel selection and the reporting of
// results (errors, non-stall interrupts, idle events, engine completion).
#include "gpu/pfifo.h"

#include <pthread.h>

#include <chrono>

#include "common/launch_trace.h"
#include "common/spin_lock.h"
#include "common/text.h"

namespace vgpu::gpu {

using namespace regs::pfifo;
using regs::ChannelError;

Pfifo::Pfifo(Deps deps) : d_(std::move(deps)) {
  for (auto& watchdog : chan_watchdog_) watchdog.store(regs::pfifo::CHAN_WATCHDOG_RESET_MS);
}

Pfifo::~Pfifo() { stop(); }

void Pfifo::start() {
  // With a device back end the engine threads only issue GPU work and
  // wait for it: they poll for the next job as PFIFO does for the next
  // doorbell (docs/cuda.md, "Hand-overs").
  const uint64_t engine_spin_ns = d_.device ? IDLE_POLL_NS : 0;
  engines_[static_cast<size_t>(EngineId::copy)] = std::make_unique<EngineThread>("copy", d_.log, engine_spin_ns);
  engines_[static_cast<size_t>(EngineId::compute)] = std::make_unique<EngineThread>("compute", d_.log, engine_spin_ns);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "pfifo");  // for a thread listing (/proc, perf)
    loop();
  });
}

void Pfifo::stop() {
  {
    std::lock_guard l(d_.mutex);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& e : engines_) e.reset();  // joins; results posted meanwhile are dropped with us
}

void Pfifo::wake() {
  {
    std::lock_guard l(d_.mutex);
    kick_ = true;
  }
  cv_.notify_all();
}

void Pfifo::doorbell(uint64_t bar1_offset) {
  const uint32_t base_reg = userd_base_.load(std::memory_order_acquire);
  const uint64_t base = uint64_t{UserdBaseAddr::get(base_reg)} << USERD_BASE_SHIFT;
  const uint64_t span = uint64_t{regs::userd::SIZE} * regs::NUM_CHANNELS;
  if (bar1_offset < base || bar1_offset >= base + span) return;
  if ((bar1_offset - base) % regs::userd::SIZE != regs::userd::GP_PUT) return;
  const auto chid = static_cast<uint32_t>((bar1_offset - base) / regs::userd::SIZE);
  LaunchTrace::mark(LaunchPhase::doorbell_seen);
  if (!waiting_.load(std::memory_order_relaxed)) LaunchTrace::mark(LaunchPhase::pfifo_busy);
  {
    std::unique_lock l(d_.mutex, std::defer_lock);
    lock_spinning(l);
    ChannelSlot& s = channels_[chid];
    if (s.held) s.resume = true;  // a channel held at a slice boundary goes on
    kick_ = true;
  }
  cv_.notify_all();
}

void Pfifo::loop() {
  std::unique_lock l(d_.mutex);
  auto last_poll = std::chrono::steady_clock::now();
  while (!stop_) {
    // What this pass raised is delivered before its slice: the PTIMER
    // alarm, and once per poll period whatever is pending (a slice's own
    // interrupts and events go after it; every other thread delivers what
    // it raises). A delivery with nothing new was most of PFIFO's work
    // between picking a doorbell's channel and fetching its entry, and
    // again before it took an engine's result (docs/cuda-worker.md,
    // "PFIFO at the ring").
    bool deliver = false;
    LaunchTrace::mark_first_after(LaunchPhase::pfifo_pass, LaunchPhase::doorbell_seen);
    // Parked channels retry once per poll period even while others keep us busy.
    if (const auto now = std::chrono::steady_clock::now(); now - last_poll >= std::chrono::nanoseconds(POLL_NS)) {
      last_poll = now;
      poll_round_.fetch_add(1);
      deliver = true;
    }
    if (d_.tick && d_.tick()) deliver = true;
    drop_stale_runs();
    std::optional<Pick> next = pick();
    if (next) {
      servicing_ = next->chid;
      LaunchTrace::mark_first_after(LaunchPhase::pfifo_woke, LaunchPhase::doorbell_seen);
    }
    l.unlock();
    idle_cv_.notify_all();
    if (deliver) d_.notify();
    if (next) {
      // What the slice raises is delivered once it is over and PREEMPT
      // no longer reads pending for it: a handler may wait on a thread
      // that is itself polling PREEMPT.
      service_guarded(std::move(*next));
      lock_spinning(l);
      servicing_.reset();
      l.unlock();
      idle_cv_.notify_all();
      d_.notify();
      LaunchTrace::mark(LaunchPhase::delivered);
    }
    lock_spinning(l);
    if (next || stop_) continue;
    const auto idle_since = std::chrono::steady_clock::now();
    // Work on a real GPU: its completion is watched for, as a doorbell is,
    // for up to DEVICE_POLL_NS (the engine threads use no host CPU of
    // their own for it but a stream synchronize).
    const bool device_busy = d_.device != nullptr && !engines_idle();
    if (!device_busy) LaunchTrace::mark(LaunchPhase::pfifo_idle);
    if (!kick_ && (device_busy || (last_idle_ns_ <= IDLE_POLL_NS && engines_idle()))) {
      l.unlock();
      const auto until = idle_since + std::chrono::nanoseconds(device_busy ? DEVICE_POLL_NS : IDLE_POLL_NS);
      waiting_.store(true, std::memory_order_relaxed);
      spin_until([this] { return kick_.load(std::memory_order_acquire); }, idle_since, until);
      waiting_.store(false, std::memory_order_relaxed);
      lock_spinning(l);  // a kick's sender may still hold it
    }
    if (!kick_) {
      waiting_.store(true, std::memory_order_relaxed);
      cv_.wait_for(l, std::chrono::nanoseconds(POLL_NS));
      waiting_.store(false, std::memory_order_relaxed);
    }
    // Only a wait for new work says how soon the next doorbell comes: one
    // for a GPU's result lasts as long as the kernel and would make the
    // wait after it sleep (a wake-up of 5-10 us on each launch).
    if (!device_busy)
      last_idle_ns_ = kick_ ? static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                        std::chrono::steady_clock::now() - idle_since)
                                                        .count())
                            : ~uint64_t{0};
    kick_ = false;
  }
}

bool Pfifo::engines_idle() const {
  for (const auto& e : engines_)
    if (e && !e->idle()) return false;
  return true;
}

bool Pfifo::schedulable(uint32_t chid) const {
  return CtrlEnable::get(ctrl_) && d_.unit_enabled() && channels_.ready(chid);
}

bool Pfifo::has_work(uint32_t chid) const {
  const ChannelSlot& s = channels_[chid];
  const ChannelRun& r = runs_[chid];
  if (r.epoch != s.epoch || !r.loaded || s.engine_result) return true;
  if (r.engine_wait) return false;
  if (r.held) return s.resume;
  if (r.next_piece) return true;
  if (r.parked) return r.parked_sem_epoch != sem_epoch_.load() || r.parked_poll_round != poll_round_.load();
  return r.in_segment || r.busy || gp_put(r) != r.gp_get;
}

// Round robin over the listed channels only: a scan of all 128 slots and
// runs on each pass of the loop cost 1-2 us of cache misses on the GPU
// machine, twice per launch (docs/cuda.md, "Hand-overs").
std::optional<Pfifo::Pick> Pfifo::pick() {
  std::optional<Pick> picked;
  channels_.listed().for_each_from(next_chid_, [&](uint32_t chid) {
    if (!schedulable(chid) || !has_work(chid)) return true;
    next_chid_ = (chid + 1) % regs::NUM_CHANNELS;
    ChannelSlot& s = channels_[chid];
    picked = Pick{chid, s.epoch, std::move(s.engine_result)};
    s.engine_result.reset();
    return false;
  });
  return picked;
}

void Pfifo::drop_stale_runs() {
  loaded_runs_.for_each_from(0, [&](uint32_t chid) {
    const ChannelSlot& s = channels_[chid];
    ChannelRun& r = runs_[chid];
    if (r.epoch != s.epoch && r.loaded && !s.engine_outstanding) r = ChannelRun{};
    if (!r.loaded) loaded_runs_.reset(chid);
    return true;
  });
}

void Pfifo::service(Pick p) {
  ChannelRun& run = runs_[p.chid];
  if (run.epoch != p.epoch) {
    run = ChannelRun{};
    run.epoch = p.epoch;
  }
  if (!run.loaded) {
    uint32_t chan_inst;
    {
      std::lock_guard l(d_.mutex);
      chan_inst = channels_[p.chid].inst;
    }
    if (auto r = load(p.chid, chan_inst, run); !r) return fail(p.chid, p.epoch, r.error());
    {
      std::lock_guard l(d_.mutex);
      loaded_runs_.set(p.chid);
    }
    if (run.in_segment)
      if (auto r = take_up_restored(p.chid, run); !r) return fail(p.chid, p.epoch, r.error());
  }
  if (p.engine_result) {
    LaunchTrace::mark(LaunchPhase::result_seen);
    run.engine_wait = false;
    if (run.following && release_written_[p.chid].load(std::memory_order_acquire) == run.following->token)
      run.released_early = run.following;
    run.following.reset();
    const uint64_t started = engine_job_start_ns_[p.chid].load();
    if (const uint64_t now = d_.clock.now_ns(); now > started) run.op_engine_ns += now - started;
    if (!*p.engine_result) {
      run.divided.reset();
      return fail(p.chid, p.epoch, p.engine_result->error());
    }
    if (run.divided && !run.divided->finished()) {
      slice_boundary(p.chid, run);
      return publish(p.chid, run);
    }
    run.divided.reset();
    advance(run);
  }
  if (run.held || run.next_piece) {
    if (auto r = resume_divided(p.chid, run); !r) return fail(p.chid, p.epoch, r.error());
    return publish(p.chid, run);
  }
  if (auto r = run_slice(p.chid, run); !r) return fail(p.chid, p.epoch, r.error());
  publish(p.chid, run);
}

// An on-demand timed slice (§10.5) whose piece ended while no one asked
// for the engine: the work goes on without a stop for the host, until the
// run since the host last resumed it reaches SLICE_LONE_MAX_MS. Real time
// only: in virtual time pieces end at their time, so that runs repeat.
bool Pfifo::runs_on(uint32_t slice, const ChannelRun& run, uint64_t now) const {
  if (!ChanSliceTimed::get(slice) || !ChanSliceOnDemand::get(slice)) return false;
  if (d_.clock.kind() != ClockKind::real || SliceYieldRequest::get(slice_yield_.load())) return false;
  constexpr uint64_t LONE_MAX_NS = uint64_t{SLICE_LONE_MAX_MS} * 1'000'000;
  return now - std::min(now, run.busy_start_ns) < LONE_MAX_NS;
}

// A piece of the current method's divided work ran and more are left:
// hold the channel for the host (CHAN_SLICE hold) or go on with the next
// piece at the channel's next turn in PFIFO's round robin.
void Pfifo::slice_boundary(uint32_t chid, ChannelRun& run) {
  const uint64_t now = d_.clock.now_ns();
  std::lock_guard l(d_.mutex);
  ChannelSlot& s = channels_[chid];
  if (s.epoch != run.epoch) return;
  const uint32_t slice = chan_slice_[chid].load();
  if (!ChanSliceHold::get(slice) || runs_on(slice, run, now)) {
    run.next_piece = true;
    return;
  }
  run.held = true;
  s.held = true;
  s.resume = false;
  d_.events.push(ChannelEvent{ChannelEvent::Kind::slice, chid, run.busy_start_ns, now});
}

// The channel's turn after a slice boundary: the next piece to its engine
// (a held channel only once its GP_PUT was written).
Pfifo::Ran Pfifo::resume_divided(uint32_t chid, ChannelRun& run) {
  if (run.held) {
    std::lock_guard l(d_.mutex);
    ChannelSlot& s = channels_[chid];
    if (!s.resume) return {};
    s.held = s.resume = false;
    run.held = false;
    run.busy_start_ns = d_.clock.now_ns();  // the host's turn of it starts again
  }
  run.next_piece = false;
  if (auto budget = engine_budget(chid, run); !budget)
    return std::unexpected(budget.error());
  else
    submit_piece(chid, run, *budget);
  return {};
}

void Pfifo::publish(uint32_t chid, ChannelRun& run) {
  const uint32_t put = gp_put(run);
  const bool busy = run.in_segment || run.engine_wait || run.parked || put != run.gp_get;
  const uint64_t now = d_.clock.now_ns();
  {
    std::lock_guard l(d_.mutex);
    ChannelSlot& s = channels_[chid];
    if (s.epoch != run.epoch) return;
    s.busy = busy;
    s.acquire_pending = run.parked;
    s.loaded = run.loaded;
    s.userd = run.userd;
    s.gp_get = run.gp_get;
    if (run.busy && !busy) d_.events.push(ChannelEvent{ChannelEvent::Kind::idle, chid, run.busy_start_ns, now});
  }
  if (!busy) run.busy = false;
}

void Pfifo::service_guarded(Pick p) {
  const uint32_t chid = p.chid;
  const uint64_t epoch = p.epoch;
  try {
    service(std::move(p));
  } catch (const std::exception& e) {
    internal_failure(chid, epoch, e.what());
  } catch (...) {
    internal_failure(chid, epoch, "unknown exception");
  }
}

MethodDone run_engine_work(Log& log, uint32_t chid, const std::function<MethodDone()>& work) {
  const char* what = "unknown exception";
  try {
    return work();
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  try {
    log.internal_error(strfmt("channel %u: engine work failed: %s; the channel stops with error internal", chid, what));
  } catch (...) {
  }
  return std::unexpected(ChannelFault{.code = ChannelError::internal});
}

void Pfifo::internal_failure(uint32_t chid, uint64_t epoch, const char* what) {
  try {
    d_.log.internal_error(strfmt("channel %u: %s; the channel stops with error internal", chid, what));
  } catch (...) {
  }
  fail(chid, epoch, ChannelFault{.code = ChannelError::internal});
}

void Pfifo::fail(uint32_t chid, uint64_t epoch, ChannelFault f) {
  ChannelRun& run = runs_[chid];
  run.busy = false;
  run.parked = false;
  run.held = run.next_piece = false;
  run.divided.reset();
  run.following.reset();
  run.released_early.reset();
  const uint64_t now = d_.clock.now_ns();
  {
    std::lock_guard l(d_.mutex);
    if (!channels_.fail(chid, epoch, f)) return;
    if (f.mmu) {
      Fault mf = *f.mmu;
      mf.chid = chid;
      d_.faults.record(mf);
    }
    if (intr_en_ & IntrChannelError::mask) ++raised_[static_cast<size_t>(regs::pci::MsiVector::error)];
    d_.events.push(ChannelEvent{ChannelEvent::Kind::error, chid, now, now});
  }
}

void Pfifo::raise_nonstall(uint32_t chid, uint64_t epoch) {
  const uint64_t now = d_.clock.now_ns();
  {
    std::lock_guard l(d_.mutex);
    if (!channels_.raise_nonstall(chid, epoch)) return;
    nonstall_engine_ |= NONSTALL_ENGINE_HOST;
    if (intr_en_ & IntrNonStall::mask) ++raised_[static_cast<size_t>(regs::pci::MsiVector::nonstall)];
    d_.events.push(ChannelEvent{ChannelEvent::Kind::nonstall, chid, now, now});
  }
  if (std::this_thread::get_id() != thread_.get_id()) d_.notify();  // else the slice's end delivers it
}

void Pfifo::semaphore_written() {
  sem_epoch_.fetch_add(1);
  wake();
}

void Pfifo::post_engine_result(uint32_t chid, uint64_t epoch, MethodDone result) {
  LaunchTrace::mark(LaunchPhase::job_done);
  {
    std::unique_lock l(d_.mutex, std::defer_lock);
    lock_spinning(l);
    channels_.engine_finished(chid, epoch, std::move(result));
    kick_ = true;
  }
  cv_.notify_all();
  idle_cv_.notify_all();
}

bool Pfifo::all_idle() const {
  for (uint32_t chid = 0; chid < regs::NUM_CHANNELS; ++chid) {
    const ChannelSlot& s = channels_[chid];
    if (s.engine_outstanding || s.engine_result) return false;
    if (!schedulable(chid)) continue;
    if (!s.loaded || s.busy) return false;
    if (d_.vram.read32(s.userd + regs::userd::GP_PUT) != s.gp_get) return false;
  }
  return engines_idle();
}

bool Pfifo::wait_idle(uint64_t timeout_ns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  std::unique_lock l(d_.mutex);
  kick_ = true;
  cv_.notify_all();
  while (!all_idle()) {
    if (idle_cv_.wait_until(l, deadline) == std::cv_status::timeout) return all_idle();
  }
  return true;
}

}  // namespace vgpu::gpu
