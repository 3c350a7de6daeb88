// SPDX-License-Identifier: GPL-2.0-or-later
#include "bench/sched/sim.h"

#include <algorithm>
#include <queue>

#include "common/clock.h"
#include "scheduler/dispatcher.h"

namespace vgpu::bench {
namespace {

using sched::Submission;
using sched::VmId;

enum class EventKind { arrival, completion, wake };

struct Event {
  uint64_t at_ns = 0;
  uint64_t seq = 0;  // ties broken in insertion order: deterministic
  EventKind kind = EventKind::wake;
  Submission sub;
  uint64_t start_ns = 0;
  uint64_t turn_start_ns = 0;  // a completion: when its turn's first piece started
  bool next_slice = false;     // an arrival: the rest of a sliced kernel
  bool operator>(const Event& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : seq > o.seq; }
};

class EventQueue {
 public:
  void push(Event e) {
    e.seq = next_seq_++;
    q_.push(e);
  }
  [[nodiscard]] bool empty() const { return q_.empty(); }
  Event pop() {
    Event e = q_.top();
    q_.pop();
    return e;
  }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q_;
  uint64_t next_seq_ = 0;
};

// The simulated engine: runs what is left of each VM's kernel, or a slice
// of it.
class SimEngine final : public sched::Engine {
 public:
  SimEngine(const SimConfig& config, VirtualClock& clock, EventQueue& events, const std::vector<uint64_t>& left)
      : config_(config), clock_(clock), events_(events), left_(left) {}
  void start(const Submission& s) override {
    const uint64_t now = clock_.now_ns();
    run(s, now, now);
  }
  // The next piece of the turn of `s` that started at turn_start.
  void run(const Submission& s, uint64_t now, uint64_t turn_start) {
    const uint64_t left = left_[s.vm];
    events_.push(Event{.at_ns = now + (config_.slice_ns ? std::min(config_.slice_ns, left) : left),
                       .kind = EventKind::completion,
                       .sub = s,
                       .start_ns = now,
                       .turn_start_ns = turn_start});
  }

 private:
  const SimConfig& config_;
  VirtualClock& clock_;
  EventQueue& events_;
  const std::vector<uint64_t>& left_;
};

// Spread [start, end) over the share-over-time windows.
void account_samples(SimVmResult& r, uint64_t start, uint64_t end, uint64_t sample_ns) {
  while (start < end) {
    const size_t idx = static_cast<size_t>(start / sample_ns);
    const uint64_t window_end = (idx + 1) * sample_ns;
    const uint64_t piece_end = std::min(end, window_end);
    if (r.busy_per_sample_ns.size() <= idx) r.busy_per_sample_ns.resize(idx + 1, 0);
    r.busy_per_sample_ns[idx] += piece_end - start;
    start = piece_end;
  }
}

// What a simulated run needs to go on past one event.
struct SimState {
  const SimConfig& config;
  SimEngine& engine;
  sched::Dispatcher& dispatcher;
  EventQueue& events;
  std::vector<uint64_t>& left;       // of each VM's kernel in progress
  std::vector<uint64_t>& submitted;  // when that kernel was submitted
  SimResult& result;
};

// A piece ended at e.at_ns: account it, then the kernel's next slice, the
// turn's next kernel, or the VM's next kernel after its think time.
void complete(const Event& e, const SimState& st) {
  SimVmResult& r = st.result.vms[e.sub.vm];
  r.gpu_ns += e.at_ns - e.start_ns;
  account_samples(r, e.start_ns, e.at_ns, st.config.sample_ns);
  st.result.elapsed_ns = e.at_ns;
  st.left[e.sub.vm] -= std::min(st.left[e.sub.vm], e.at_ns - e.start_ns);
  const SimVm& vm = st.config.vms[e.sub.vm];
  // A turn the policy gave a length goes on while it lasts.
  const bool turn_left = e.sub.turn_ns != 0 && st.config.slice_ns != 0 && e.at_ns - e.turn_start_ns < e.sub.turn_ns;
  if (st.left[e.sub.vm] > 0) {
    if (turn_left) {  // the kernel's next slice in the same turn
      st.engine.run(e.sub, e.at_ns, e.turn_start_ns);
      return;
    }
    st.dispatcher.completed(e.turn_start_ns, e.at_ns);
    // The kernel's next slice, queued at once.
    st.events.push(
        Event{.at_ns = e.at_ns, .kind = EventKind::arrival, .sub = Submission{.vm = e.sub.vm}, .next_slice = true});
    return;
  }
  r.latencies_ns.push_back(e.at_ns - st.submitted[e.sub.vm]);
  if (turn_left && vm.think_ns == 0 && st.config.gap_ns <= st.config.turn_hold_ns) {
    // The turn holds for the VM's next kernel, which comes within the hold.
    st.left[e.sub.vm] = vm.kernel_ns;
    st.submitted[e.sub.vm] = e.at_ns + st.config.gap_ns;
    st.engine.run(e.sub, e.at_ns + st.config.gap_ns, e.turn_start_ns);
    return;
  }
  st.dispatcher.completed(e.turn_start_ns, e.at_ns);
  st.events.push(Event{.at_ns = e.at_ns + st.config.gap_ns + vm.think_ns,
                       .kind = EventKind::arrival,
                       .sub = Submission{.vm = e.sub.vm}});
}

}  // namespace

Result<SimResult> simulate(const SimConfig& config) {
  if (config.sample_ns == 0) return fail(Errc::invalid_argument, "sample window 0 ns");
  auto policy = sched::make_policy(config.policy, config.params);
  if (!policy) return std::unexpected(policy.error());
  VirtualClock clock;
  EventQueue events;
  std::vector<uint64_t> left(config.vms.size(), 0);       // of each VM's kernel in progress
  std::vector<uint64_t> submitted(config.vms.size(), 0);  // when that kernel was submitted
  SimEngine engine(config, clock, events, left);
  sched::Dispatcher dispatcher(std::move(*policy), clock, engine);

  SimResult result;
  result.vms.resize(config.vms.size());
  for (VmId vm = 0; vm < config.vms.size(); ++vm) {
    if (config.vms[vm].kernel_ns == 0)
      return fail(Errc::invalid_argument, "vm " + std::to_string(vm) + ": kernel length 0");
    if (auto st = dispatcher.add_vm(vm, config.vms[vm].weight); !st) return std::unexpected(st.error());
    events.push(Event{.at_ns = 0, .kind = EventKind::arrival, .sub = Submission{.vm = vm}});
  }

  // The wake event already queued, if any (UINT64_MAX: none).
  constexpr uint64_t NO_WAKE = UINT64_MAX;
  uint64_t wake_pending = NO_WAKE;
  while (!events.empty()) {
    const Event e = events.pop();
    if (e.at_ns > config.duration_ns) break;
    clock.advance_to(e.at_ns);
    switch (e.kind) {
      case EventKind::arrival:
        if (!e.next_slice) {
          left[e.sub.vm] = config.vms[e.sub.vm].kernel_ns;
          submitted[e.sub.vm] = e.at_ns;
        }
        if (auto st = dispatcher.submit(e.sub.vm, 0); !st) return std::unexpected(st.error());
        break;
      case EventKind::completion: complete(e, {config, engine, dispatcher, events, left, submitted, result}); break;
      case EventKind::wake:
        if (wake_pending == e.at_ns) wake_pending = NO_WAKE;
        dispatcher.tick();
        break;
    }
    const auto wake = dispatcher.wake_at();
    if (wake && *wake != wake_pending) {
      wake_pending = *wake;
      events.push(Event{.at_ns = std::max(*wake, clock.now_ns()), .kind = EventKind::wake});
    }
  }
  result.dispatched = dispatcher.dispatched();
  return result;
}

}  // namespace vgpu::bench
