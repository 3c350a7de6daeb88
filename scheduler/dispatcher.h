// SPDX-License-Identifier: GPL-2.0-or-later
// The mechanism around a Policy: VM threads submit work (returns at once),
// the dispatcher asks the policy and hands one submission at a time to the
// engine (non-preemptive: at most one in flight), and the engine reports
// each completion with its start and end timestamps, which the policy
// charges to the VM. Every physical submission of the mediator goes
// through here.
//
// Two ways to drive it, same decisions:
//  - threaded (start_thread): each step still runs on the thread that
//    submitted or completed; a dispatcher thread waits out the policy's
//    timed retries (yield windows, replenishment) on the Clock. Real time.
//  - inline (default): each submit/completed runs the scheduling step on
//    the caller's thread; when the policy asks to wait, wake_at() says
//    until when, and the driver calls tick() once its clock is there. For
//    virtual time and discrete-event simulation (bench/sched).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/change_teller.h"
#include "common/clock.h"
#include "scheduler/policy.h"

namespace vgpu::sched {

class Engine {
 public:
  virtual ~Engine() = default;
  // Begin running `s` asynchronously. When it has run, the engine calls
  // Dispatcher::completed (or complete_if) from any thread; it may do so
  // before start() returns.
  virtual void start(const Submission& s) = 0;
};

// The one submission on the engine (submissions are not preemptive): who,
// which of its channels, and when it was dispatched. The dispatcher owns
// it; the engine's reports end it.
struct Flight {
  Submission submission;
  uint64_t dispatched_ns = 0;
};

class Dispatcher {
 public:
  Dispatcher(std::unique_ptr<Policy> policy, Clock& clock, Engine& engine);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  [[nodiscard]] Status add_vm(VmId vm, uint32_t weight);
  [[nodiscard]] Status remove_vm(VmId vm);
  // Policy::set_weight; a waiting decision is retaken at once.
  [[nodiscard]] Status set_weight(VmId vm, uint32_t weight);
  [[nodiscard]] uint32_t weight(VmId vm) const;
  // Queue one submission of `vm` on its `channel`.
  [[nodiscard]] Status submit(VmId vm, uint32_t channel);
  // The engine finished the submission in flight, which ran from start_ns
  // to end_ns.
  void completed(uint64_t start_ns, uint64_t end_ns);
  // The same, only if the submission in flight is `vm`'s on `channel` (and,
  // when `seq` is given, that submission): reports that name a channel may
  // arrive after its turn ended. Without `start_ns` the turn counts from
  // its dispatch. Returns whether it ended one. `ended`, if given, hears
  // the GPU time charged when it does, before the next dispatch: it runs
  // with the dispatcher's lock held and must not block or call back.
  // `requeue`, if given, runs after that, without the lock and before the
  // next pick: the ended VM queues what it has left (it may submit), so
  // that the pick sees it. Without it, a VM whose turn ended while another
  // VM's dispatch ran long on this thread (host work) was not queued until
  // that VM's next turns had been dispatched too (issue 37 item 5).
  struct Match {
    VmId vm;
    uint32_t channel;
    std::optional<uint64_t> seq;
  };
  using Ended = std::function<void(uint64_t gpu_ns)>;
  using Requeue = std::function<void()>;
  bool complete_if(const Match& m, std::optional<uint64_t> start_ns, uint64_t end_ns, const Ended& ended = {},
                   const Requeue& requeue = {});
  [[nodiscard]] std::optional<Flight> in_flight() const;

  // Inline mode: the clock has reached wake_at(); ask the policy again.
  void tick();
  [[nodiscard]] std::optional<uint64_t> wake_at() const;

  void start_thread();
  void stop_thread();

  // Told whether any submission waits for the engine (any_queued()) each
  // time that changes, in order, never with the dispatcher's lock held (it
  // may call in, and a call it causes that changes the queue again is told
  // after it returns, on the same thread). Set before the first submission.
  // The host asks for the GPU's engines with it (SLICE_YIELD, docs/scheduler.md
  // "Cutting on demand"): a VM alone is not cut.
  using QueueObserver = std::function<void(bool queued)>;
  void set_queue_observer(QueueObserver observer) { observer_ = std::move(observer); }

  [[nodiscard]] std::string_view policy_name() const { return policy_->name(); }
  [[nodiscard]] uint64_t gpu_ns(VmId vm) const;
  [[nodiscard]] size_t queued(VmId vm) const;  // submissions of a VM waiting for the engine
  [[nodiscard]] bool any_queued() const;       // of any VM
  [[nodiscard]] bool busy() const;
  [[nodiscard]] uint64_t dispatched() const;

 private:
  // One scheduling step with mu_ held by `lk`: dispatch while the engine
  // is free and the policy has something; otherwise note when to wake.
  void step(std::unique_lock<std::mutex>& lk);
  void kick(std::unique_lock<std::mutex>& lk);
  void run_step(std::unique_lock<std::mutex>& lk);  // step unless one is running
  void note_inline_end();                           // a flight ended: inside the step's start?
  void thread_main();
  // What the queue observer has to hear now: call with mu_ not held.
  void tell_queue();

  std::unique_ptr<Policy> policy_;
  Clock& clock_;
  Engine& engine_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Flight> in_flight_;
  bool stepping_ = false;      // a step is running (engine may re-enter)
  bool again_ = false;         // something happened during that step
  std::thread::id stepper_;    // the thread running the step
  bool ended_inline_ = false;  // its last dispatch ended inside the engine's start, on that thread
  std::optional<uint64_t> wake_at_;
  std::optional<uint64_t> thread_wake_at_;  // the retry time the thread is waiting for
  uint64_t dispatched_ = 0;

  bool threaded_ = false;
  bool stop_ = false;
  bool kicked_ = false;
  std::thread thread_;

  QueueObserver observer_;
  ChangeTeller queue_teller_;
};

}  // namespace vgpu::sched
