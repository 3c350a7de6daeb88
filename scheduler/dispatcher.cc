// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace vgpu::sched {
namespace {
// A virtual clock is moved by someone else: look at it this often (real
// time) while waiting for a yield window to end.
constexpr auto VIRTUAL_POLL = std::chrono::milliseconds(1);
// A dispatch that ended inside the engine's start after holding the
// stepping thread this long did the host's work for its VM (a piece of its
// shadow sync, a turn's length), not an engine's instant completion (tens
// of microseconds), which keeps the next pick on the same thread.
constexpr uint64_t HAND_OVER_AFTER_NS = 500'000;
}  // namespace

Dispatcher::Dispatcher(std::unique_ptr<Policy> policy, Clock& clock, Engine& engine)
    : policy_(std::move(policy)), clock_(clock), engine_(engine) {}

Dispatcher::~Dispatcher() { stop_thread(); }

Status Dispatcher::add_vm(VmId vm, uint32_t weight) {
  std::lock_guard lk(mu_);
  return policy_->add_vm(vm, weight);
}

Status Dispatcher::remove_vm(VmId vm) {
  std::unique_lock lk(mu_);
  auto st = policy_->remove_vm(vm);
  if (st) kick(lk);
  lk.unlock();
  tell_queue();
  return st;
}

Status Dispatcher::set_weight(VmId vm, uint32_t weight) {
  std::unique_lock lk(mu_);
  auto st = policy_->set_weight(vm, weight);
  if (st) kick(lk);
  return st;
}

uint32_t Dispatcher::weight(VmId vm) const {
  std::lock_guard lk(mu_);
  return policy_->weight(vm);
}

Status Dispatcher::submit(VmId vm, uint32_t channel) {
  std::unique_lock lk(mu_);
  auto st = policy_->arrive(Submission{.vm = vm, .channel = channel}, clock_.now_ns());
  if (!st) return std::unexpected(st.error().context("submit"));
  kick(lk);
  lk.unlock();
  tell_queue();
  return {};
}

void Dispatcher::completed(uint64_t start_ns, uint64_t end_ns) {
  std::unique_lock lk(mu_);
  if (!in_flight_) return;
  policy_->complete(in_flight_->submission.vm, start_ns, end_ns);
  in_flight_.reset();
  note_inline_end();
  kick(lk);
  lk.unlock();
  tell_queue();
}

bool Dispatcher::complete_if(const Match& m, std::optional<uint64_t> start_ns, uint64_t end_ns, const Ended& ended,
                             const Requeue& requeue) {
  std::unique_lock lk(mu_);
  if (!in_flight_) return false;
  const Submission& s = in_flight_->submission;
  if (s.vm != m.vm || s.channel != m.channel || (m.seq && s.seq != *m.seq)) return false;
  const uint64_t start = start_ns.value_or(in_flight_->dispatched_ns);
  policy_->complete(s.vm, start, end_ns);
  in_flight_.reset();
  note_inline_end();
  if (ended) ended(end_ns > start ? end_ns - start : 0);
  if (requeue) {
    // No step picks until the requeue is in: one that another thread
    // starts meanwhile only marks the step to run again (run_step), and a
    // submit of the requeue's own does the same.
    struct Relock {  // also when the requeue throws: the dispatcher must not stay stepping
      std::unique_lock<std::mutex>& lk;
      bool& stepping;
      const bool held;
      ~Relock() {
        lk.lock();
        if (held) stepping = false;
      }
    };
    Relock relock{lk, stepping_, !std::exchange(stepping_, true)};
    lk.unlock();
    requeue();
  }
  kick(lk);
  lk.unlock();
  tell_queue();
  return true;
}

std::optional<Flight> Dispatcher::in_flight() const {
  std::lock_guard lk(mu_);
  return in_flight_;
}

void Dispatcher::tick() {
  std::unique_lock lk(mu_);
  kick(lk);
  lk.unlock();
  tell_queue();
}

// What the queue observer has to hear (common/change_teller.h).
void Dispatcher::tell_queue() {
  if (!observer_) return;
  queue_teller_.changed([this] { return any_queued(); }, [this](bool queued) { observer_(queued); });
}

std::optional<uint64_t> Dispatcher::wake_at() const {
  std::lock_guard lk(mu_);
  return wake_at_;
}

size_t Dispatcher::queued(VmId vm) const {
  std::lock_guard lk(mu_);
  return policy_->queued(vm);
}

bool Dispatcher::any_queued() const {
  std::lock_guard lk(mu_);
  return policy_->any_queued();
}

uint64_t Dispatcher::gpu_ns(VmId vm) const {
  std::lock_guard lk(mu_);
  return policy_->gpu_ns(vm);
}

bool Dispatcher::busy() const {
  std::lock_guard lk(mu_);
  return in_flight_.has_value();
}

uint64_t Dispatcher::dispatched() const {
  std::lock_guard lk(mu_);
  return dispatched_;
}

// The step runs on the thread whose event made it necessary (a VM's
// submission, an engine's completion): no hand-off to another thread on
// the way to the engine. The dispatcher thread, when there is one, only
// waits out the policy's timed retries (yield windows, replenishment).
void Dispatcher::kick(std::unique_lock<std::mutex>& lk) {
  run_step(lk);
  if (threaded_ && wake_at_ != thread_wake_at_) {
    kicked_ = true;
    cv_.notify_one();
  }
}

void Dispatcher::run_step(std::unique_lock<std::mutex>& lk) {
  if (stepping_) {  // another thread, or Engine::start re-entering: that step loops
    again_ = true;
    return;
  }
  step(lk);
}

void Dispatcher::note_inline_end() {
  if (stepping_ && std::this_thread::get_id() == stepper_) ended_inline_ = true;
}

// A dispatch can end inside the engine's start, on the stepping thread,
// after the host's work for its VM took the turn (a piece of its shadow
// sync). A thread other than the dispatcher's own (a VM's doorbell, the
// watchdog ending a held turn, an engine's event) runs at most one such
// dispatch a step and hands the next pick to the dispatcher's thread:
// otherwise a VM whose doorbell ended its own turn stayed in that call
// while the other VM's host work was dispatched turn after turn, none of
// them picking the VM, which could not queue its next launch from the
// thread held there (docs/scheduler.md, "Host work"). A dispatch that ends
// at once (an instant engine, nothing to run) keeps the step here.
void Dispatcher::step(std::unique_lock<std::mutex>& lk) {
  stepping_ = true;
  stepper_ = std::this_thread::get_id();
  const bool hand_over = threaded_ && !stop_ && stepper_ != thread_.get_id();
  do {
    again_ = false;
    if (in_flight_) break;
    Decision d = policy_->pick(clock_.now_ns());
    wake_at_ = d.retry_at_ns;
    if (!d.dispatch) break;
    const Submission s = *d.dispatch;
    in_flight_ = Flight{s, clock_.now_ns()};
    ++dispatched_;
    ended_inline_ = false;
    const uint64_t started_ns = hand_over ? clock_.now_ns() : 0;
    lk.unlock();
    engine_.start(s);  // may call completed() before returning
    lk.lock();
    if (hand_over && ended_inline_ && again_ && clock_.now_ns() - started_ns >= HAND_OVER_AFTER_NS) {
      kicked_ = true;
      cv_.notify_one();
      break;
    }
  } while (again_);
  stepping_ = false;
}

void Dispatcher::start_thread() {
  std::lock_guard lk(mu_);
  if (threaded_) return;
  threaded_ = true;
  stop_ = false;
  kicked_ = true;
  thread_ = std::thread([this] { thread_main(); });
}

void Dispatcher::stop_thread() {
  {
    std::lock_guard lk(mu_);
    if (!threaded_) return;
    stop_ = true;
    cv_.notify_one();
  }
  thread_.join();
  std::lock_guard lk(mu_);
  threaded_ = false;
}

void Dispatcher::thread_main() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    kicked_ = false;
    run_step(lk);
    lk.unlock();
    tell_queue();
    lk.lock();
    thread_wake_at_ = wake_at_;
    if (stop_ || kicked_) continue;
    if (!in_flight_ && wake_at_) {
      const uint64_t now = clock_.now_ns();
      if (now >= *wake_at_) continue;
      const auto slice = clock_.kind() == ClockKind::real
                             ? std::chrono::nanoseconds(*wake_at_ - now)
                             : std::chrono::duration_cast<std::chrono::nanoseconds>(VIRTUAL_POLL);
      cv_.wait_for(lk, slice, [this] { return stop_ || kicked_; });
    } else {
      cv_.wait(lk, [this] { return stop_ || kicked_; });
    }
  }
}

}  // namespace vgpu::sched
