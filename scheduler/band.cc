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
// docs/scheduler.md gives the reading of Gdev's code behind each rule.
#include <set>

#include "scheduler/policies.h"
#include "scheduler/policy_base.h"

namespace vgpu::sched {
namespace {

class Band final : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;
  std::string_view name() const override { return "band"; }

  Decision pick(uint64_t now_ns) override {
    advance(now_ns);
    if (yield_) return pick_in_window(now_ns);
    const auto next = first_queued();
    if (!next) return {};
    const bool should_yield = next != last_completed_ && over_share(vm(*next)) && vms_.size() > 1 &&
                              !(params_.yield_ends_when_all_queued && all_vms_queued());
    if (!should_yield) return dispatch(*next);
    Window w;
    w.until_ns = now_ns + params_.yield_window_ns;
    for (const auto& [id, v] : vms_)
      if (!v.queue.empty()) w.queued_at_start.insert(id);
    yield_ = std::move(w);
    return Decision{.dispatch = std::nullopt, .retry_at_ns = yield_->until_ns};
  }

  Status remove_vm(VmId id) override {
    if (yield_) yield_->queued_at_start.erase(id);
    return PolicyBase::remove_vm(id);
  }

 private:
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
    return Decision{.dispatch = pop(id), .retry_at_ns = std::nullopt};
  }

  void on_complete(VmId id) override {
    const Vm& v = vm(id);
    if (over_budget(v) && over_share(v)) demote(id);
  }

  std::optional<Window> yield_;
};

}  // namespace

std::unique_ptr<Policy> make_band(const PolicyParams& params) { return std::make_unique<Band>(params); }

}  // namespace vgpu::sched
