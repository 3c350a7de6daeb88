// SPDX-License-Identifier: GPL-2.0-or-later
// CREDIT (Gdev's gdev_vsched_credit): each VM has a budget replenished every
// period by period * share and charged with the makespan of each of its
// submissions. A VM whose budget is used up (<= 0) at a completion goes to
// the tail of the run list; the next submission comes from the first VM in
// run-list order that has work queued. Work-conserving: an over-budget VM
// still runs when no VM with budget has work queued at that instant.
#include "scheduler/policies.h"
#include "scheduler/policy_base.h"

namespace vgpu::sched {
namespace {

class Credit final : public PolicyBase {
 public:
  explicit Credit(const PolicyParams& params) : PolicyBase(params, "credit") {}

 private:
  Decision choose(uint64_t) override {
    const auto next = first_queued();
    if (!next) return {};
    return Decision{.dispatch = pop(*next), .retry_at_ns = std::nullopt};
  }

  void on_complete(VmId id, uint64_t) override {
    if (over_budget(vm(id))) demote(id);
  }
};

}  // namespace

std::unique_ptr<Policy> make_credit(const PolicyParams& params) { return std::make_unique<Credit>(params); }

}  // namespace vgpu::sched
