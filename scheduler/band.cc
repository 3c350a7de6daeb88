// SPDX-License-Identifier: GPL-2.0-or-later
// BAND, the bandwidth-aware non-preemptive device scheduler of Gdev
// (Kato et al., USENIX ATC 2012), as GPUvm used it (USENIX ATC 2014). Two
// changes to CREDIT:
//  1. A VM is demoted to the tail of the run list only when it is over
//     budget AND its measured utilization is over its share.
//  2. When the VM picked next is not the one that just completed and is
//     over its share, the engine is held free for a short yield window, so
//     that a VM with short kernels, which re-submits a moment after its
//     completion, can arrive and go first.
// And one of ours, for bounded turns (PolicyParams::turn_ns, the mediator's
// turn-ms), "weighted turns":
//  3. The next turn goes to the waiting VM furthest behind in GPU time per
//     weight (the virtual time of weighted fair queueing), but not to the
//     VM whose turn just ended while another waits. A VM's turn lasts at
//     most turn_ns * weight / the largest weight (its quantum; the
//     mediator ends a turn at the first piece boundary past its length),
//     less what it is ahead of the busy VMs: a turn that ran over, or a
//     VM whose own turns ran dry early, is evened out by shorter turns of
//     the VM ahead. A VM back from idle may lag the others by at most its
//     quantum. Busy VMs take turns in the ratio of their weights; a VM
//     under its share that becomes runnable waits for at most the turn in
//     progress. Rule 2's yield window is not used then: the VM whose turn
//     just ended would re-queue its remainder inside the window and take
//     the engine back.
// docs/scheduler.md gives the reading of Gdev's code behind each rule.
#include <algorithm>
#include <map>
#include <set>

#include "scheduler/policies.h"
#include "scheduler/policy_base.h"

namespace vgpu::sched {
namespace {

class Band final : public PolicyBase {
 public:
  explicit Band(const PolicyParams& params) : PolicyBase(params, "band") {}

  Status remove_vm(VmId id) override {
    if (yield_) yield_->queued_at_start.erase(id);
    turns_.erase(id);
    if (running_ == id) running_.reset();
    return PolicyBase::remove_vm(id);
  }

 private:
  Decision choose(uint64_t now_ns) override {
    if (yield_) return pick_in_window(now_ns);
    if (params_.turn_ns) {
      const auto next = least_behind();
      return next ? dispatch(*next) : Decision{};
    }
    const auto next = first_queued();
    if (!next) return {};
    // Weighted turns (rule 3) replace the yield window: the VM whose turn
    // just ended would re-queue what it has left inside the window, as if
    // it were a VM arriving, and take the turn back from the one whose
    // turn it is.
    const bool should_yield = !params_.turn_ns && next != last_completed_ && over_share(vm(*next)) && vms_.size() > 1 &&
                              !(params_.yield_ends_when_all_queued && all_vms_queued());
    if (!should_yield) return dispatch(*next);
    Window w;
    w.until_ns = now_ns + params_.yield_window_ns;
    for (const auto& [id, v] : vms_)
      if (!v.queue.empty()) w.queued_at_start.insert(id);
    yield_ = std::move(w);
    return Decision{.dispatch = std::nullopt, .retry_at_ns = yield_->until_ns};
  }

  struct Window {
    uint64_t until_ns = 0;
    std::set<VmId> queued_at_start;  // VMs that were waiting when it opened
  };

  Decision pick_in_window(uint64_t now_ns) {
    // A VM that arrived during the window takes the engine unless it is
    // itself over budget and over share (Gdev makes such a VM yield too).
    for (VmId id : run_list_) {
      const Vm& v = vm(id);
      if (v.queue.empty() || yield_->queued_at_start.contains(id)) continue;
      if (over_budget(v) && over_share(v)) continue;
      return dispatch(id);
    }
    const bool nobody_can_arrive = params_.yield_ends_when_all_queued && all_vms_queued();
    if (now_ns < yield_->until_ns && !nobody_can_arrive)
      return Decision{.dispatch = std::nullopt, .retry_at_ns = yield_->until_ns};
    const auto next = first_queued();
    if (!next) {
      yield_.reset();
      return {};
    }
    return dispatch(*next);
  }

  Decision dispatch(VmId id) {
    yield_.reset();
    Submission s = pop(id);
    if (params_.turn_ns) {
      s.turn_ns = turn_length(id);
      running_ = id;
    }
    return Decision{.dispatch = s, .retry_at_ns = std::nullopt};
  }

  Status arrive(Submission s, uint64_t now_ns) override {
    // The remainder a VM re-queues as its own turn ends is not a return
    // from idle: it keeps what it is owed.
    const bool idle = vms_.contains(s.vm) && vm(s.vm).queue.empty() && running_ != s.vm && last_completed_ != s.vm;
    if (Status st = PolicyBase::arrive(s, now_ns); !st) return st;
    if (!params_.turn_ns || !idle) return {};
    // A VM back from idle catches up at most one turn on the others: time
    // it did not ask for is not owed to it.
    if (const auto ref = reference_vt(s.vm, true)) {
      double& vt = turns_[s.vm].vt;
      vt = std::max(vt, *ref - static_cast<double>(quantum_ns(s.vm)) / vm(s.vm).weight);
    }
    return {};
  }

  void on_complete(VmId id, uint64_t exec_ns) override {
    const Vm& v = vm(id);
    bool behind = over_budget(v) && over_share(v);
    if (params_.turn_ns) {
      turns_[id].vt += static_cast<double>(exec_ns) / v.weight;
      if (running_ == id) running_.reset();
      behind = behind || another_queued(id);
    }
    if (behind) demote(id);
  }

  // The length of a full turn of `id`: turn_ns scaled by its weight over
  // the largest weight, at least 1 ns.
  [[nodiscard]] uint64_t quantum_ns(VmId id) const {
    uint32_t largest = 1;
    for (const auto& [other, v] : vms_) largest = std::max(largest, v.weight);
    const uint64_t q = params_.turn_ns * vm(id).weight / largest;
    return std::max<uint64_t>(q, 1);
  }

  // Its quantum, less what it is ahead of the VMs waiting (in GPU time
  // per weight): a VM that ran over, or whose turns others cut short by
  // running dry, gets shorter turns until they are level.
  [[nodiscard]] uint64_t turn_length(VmId id) const {
    const auto quantum = static_cast<double>(quantum_ns(id));
    const auto ref = reference_vt(id, false);
    if (!ref) return quantum_ns(id);
    const auto it = turns_.find(id);
    const double lead = (it == turns_.end() ? 0.0 : it->second.vt) - *ref;
    return static_cast<uint64_t>(std::clamp(quantum - lead * vm(id).weight, 1.0, quantum));
  }

  // The least virtual time of the other VMs that are busy: that wait, or
  // whose turn just ended (its remainder is queued again after the next
  // dispatch), or, with `or_running`, whose turn is on the engine; or none.
  [[nodiscard]] std::optional<double> reference_vt(VmId id, bool or_running) const {
    std::optional<double> ref;
    for (const auto& [other, v] : vms_) {
      const bool busy = !v.queue.empty() || last_completed_ == other || (or_running && running_ == other);
      if (other == id || !busy) continue;
      const auto it = turns_.find(other);
      const double vt = it == turns_.end() ? 0.0 : it->second.vt;
      ref = ref ? std::min(*ref, vt) : vt;
    }
    return ref;
  }

  // Weighted turns: of the VMs waiting, the one furthest behind in GPU
  // time per weight (run-list order among equals), but not the VM whose
  // turn just ended while another waits. A VM back from idle is the one
  // furthest behind (within its quantum), so it goes next.
  [[nodiscard]] std::optional<VmId> least_behind() const {
    std::optional<VmId> best;
    double best_vt = 0;
    const bool others = last_completed_ && another_queued(*last_completed_);
    for (VmId id : run_list_) {
      if (vm(id).queue.empty() || (others && last_completed_ == id)) continue;
      const auto it = turns_.find(id);
      const double vt = it == turns_.end() ? 0.0 : it->second.vt;
      if (!best || vt < best_vt) {
        best = id;
        best_vt = vt;
      }
    }
    return best;
  }

  [[nodiscard]] bool another_queued(VmId id) const {
    return std::ranges::any_of(vms_, [id](const auto& kv) { return kv.first != id && !kv.second.queue.empty(); });
  }

  struct WeightedTurn {
    double vt = 0;  // GPU time charged per weight (ns): the virtual time of weighted fair queueing
  };

  std::optional<Window> yield_;
  std::map<VmId, WeightedTurn> turns_;
  std::optional<VmId> running_;  // the VM whose turn is on the engine (weighted turns)
};

}  // namespace

std::unique_ptr<Policy> make_band(const PolicyParams& params) { return std::make_unique<Band>(params); }

}  // namespace vgpu::sched
