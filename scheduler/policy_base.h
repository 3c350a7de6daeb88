// SPDX-License-Identifier: GPL-2.0-or-later
// State that every policy keeps per VM: weight, queue of submissions, GPU
// time, and Gdev's budget and utilization accounting. The accounting is
// shared so that FIFO, CREDIT and BAND charge time identically; FIFO just
// never looks at budgets.
#pragma once

#include <deque>
#include <map>
#include <vector>

#include "scheduler/policy.h"

namespace vgpu::sched {

class PolicyBase : public Policy {
 public:
  PolicyBase(const PolicyParams& params, std::string_view name) : params_(params), name_(name) {}

  std::string_view name() const final { return name_; }
  // Every policy picks on budgets and utilizations brought up to `now_ns`.
  Decision pick(uint64_t now_ns) final {
    advance(now_ns);
    return choose(now_ns);
  }

  Status add_vm(VmId vm, uint32_t weight) override;
  Status remove_vm(VmId vm) override;
  Status set_weight(VmId vm, uint32_t weight) override;
  uint32_t weight(VmId vm) const override;
  Status arrive(Submission s, uint64_t now_ns) override;
  void complete(VmId vm, uint64_t start_ns, uint64_t end_ns) override;
  uint64_t gpu_ns(VmId vm) const override;
  size_t queued(VmId vm) const override;
  bool any_queued() const override { return first_queued().has_value(); }

 protected:
  struct Vm {
    uint32_t weight = 1;
    std::deque<Submission> queue;
    uint64_t gpu_ns = 0;            // all GPU time charged to the VM
    int64_t credit_ns = 0;          // budget left in the current period
    uint64_t interval_busy_ns = 0;  // GPU time in the utilization interval
    double utilization = 0.0;       // as of the last period boundary
  };

  // The policy's own choice, after advance(now_ns).
  [[nodiscard]] virtual Decision choose(uint64_t now_ns) = 0;
  // Replenish budgets and recompute utilizations for every period boundary
  // up to `now_ns`.
  void advance(uint64_t now_ns);
  [[nodiscard]] double share(const Vm& v) const;
  // Over budget: no credit left. Over share: measured utilization above share.
  [[nodiscard]] bool over_budget(const Vm& v) const { return v.credit_ns <= 0; }
  [[nodiscard]] bool over_share(const Vm& v) const { return v.utilization > share(v); }
  // The first VM in run-list order with queued work, or none.
  [[nodiscard]] std::optional<VmId> first_queued() const;
  // Move a VM to the tail of the run list (Gdev's demotion).
  void demote(VmId vm);
  [[nodiscard]] Submission pop(VmId vm);
  [[nodiscard]] Vm& vm(VmId id) { return vms_.at(id); }
  [[nodiscard]] const Vm& vm(VmId id) const { return vms_.at(id); }
  [[nodiscard]] bool all_vms_queued() const;
  // Hook for policies: a completion of `vm` was charged `exec_ns`.
  virtual void on_complete(VmId, uint64_t /*exec_ns*/) {}

  PolicyParams params_;
  std::map<VmId, Vm> vms_;
  std::vector<VmId> run_list_;  // order in which VMs are considered
  std::optional<VmId> last_completed_;

 private:
  void replenish();
  void update_utilization(uint64_t boundary_ns);
  void start(uint64_t now_ns);

  std::string_view name_;
  bool started_ = false;
  uint64_t next_period_ns_ = 0;
  uint64_t interval_start_ns_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t total_weight_ = 0;
};

}  // namespace vgpu::sched
