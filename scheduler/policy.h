// SPDX-License-Identifier: GPL-2.0-or-later
// The scheduling policy interface: the one place where the next VM is chosen.
// GPU work is non-preemptive once on an engine, so a policy only decides
// which VM's queued submission goes next when the engine is free. Policies
// are pure state machines over time stamps (no clock, no threads, no locks):
// the Dispatcher (dispatcher.h) supplies time and serialises calls, so the
// same objects run in real time, in virtual time and in the simulator.
// Rules, parameters and defaults: docs/scheduler.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "common/error.h"

namespace vgpu::sched {

using VmId = uint32_t;

// One physical submission of one VM: the work queued on one of its
// channels (for the mediator, GPFIFO entries up to the latest GP_PUT). The
// scheduler never looks at the channel; it comes back in Engine::start.
struct Submission {
  VmId vm = 0;
  uint32_t channel = 0;     // which of the VM's channels (a context) the work is on
  uint64_t arrival_ns = 0;  // set by Policy::arrive
  uint64_t seq = 0;         // global arrival order, set by Policy::arrive
  // Set by the policy at dispatch: how long this turn may hold the engine
  // (the mediator ends it at the first piece boundary past it); 0: the
  // host's whole turn (PolicyParams::turn_ns).
  uint64_t turn_ns = 0;
};

// What to do now: dispatch a submission, or ask again at retry_at_ns (a
// yield window), or neither (nothing is queued: ask again on the next
// arrival).
struct Decision {
  std::optional<Submission> dispatch;
  std::optional<uint64_t> retry_at_ns;
};

// Every tunable of every policy, with Gdev's defaults (Kato et al., ATC 2012;
// gdev/common/gdev_sched.h: GDEV_PERIOD_DEFAULT, GDEV_CREDIT_INACTIVE_THRESHOLD,
// GDEV_UPDATE_INTERVAL; the 500 us yield chance in gdev_vsched_band.c).
struct PolicyParams {
  // CREDIT, BAND: budgets are replenished every period by period * share.
  uint64_t period_ns = 30'000'000;
  // CREDIT, BAND: a budget above +limit (an idle VM hoarding) or below
  // -limit (a VM deep in debt) is reset to zero at replenishment.
  // 0 means "equal to period_ns", as in Gdev.
  uint64_t credit_limit_ns = 0;
  // BAND: how long to hold the engine free for another VM to arrive when the
  // VM picked next is over its share.
  uint64_t yield_window_ns = 500'000;
  // BAND: measured utilization is GPU time over elapsed time since the
  // start of the current measurement interval; it is recomputed at every
  // period boundary and the interval restarts after this long.
  uint64_t util_interval_ns = 1'000'000'000;
  // BAND, off by default (Gdev always waits the whole window): end a yield
  // window early once every VM already has work queued, since then no VM
  // can arrive to use it (see docs/scheduler.md).
  bool yield_ends_when_all_queued = false;
  // BAND: the host's turn (HostConfig::turn_ns, `turn-ms`); 0: turns are
  // not bounded and BAND does not size them. With it, BAND gives each VM
  // turns of turn_ns * weight / the largest weight, less what its last
  // turns ran over (docs/scheduler.md, "Weighted turns").
  uint64_t turn_ns = 0;

  [[nodiscard]] uint64_t credit_limit() const { return credit_limit_ns ? credit_limit_ns : period_ns; }
};

class Policy {
 public:
  virtual ~Policy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;

  // Register a VM with a positive weight (its share is weight / sum of weights).
  [[nodiscard]] virtual Status add_vm(VmId vm, uint32_t weight) = 0;
  // Forget a VM and drop its queued submissions.
  [[nodiscard]] virtual Status remove_vm(VmId vm) = 0;
  // Change a registered VM's weight (positive) at run time. Shares follow
  // at once: the next over-share test (BAND) and the next replenishment
  // (CREDIT, BAND) use the new weights; budgets already granted stay.
  [[nodiscard]] virtual Status set_weight(VmId vm, uint32_t weight) = 0;
  [[nodiscard]] virtual uint32_t weight(VmId vm) const = 0;  // 0: not registered
  // A VM's submission arrives at `now_ns` (queued in arrival order per VM).
  [[nodiscard]] virtual Status arrive(Submission s, uint64_t now_ns) = 0;
  // The engine ran a submission of `vm` from start_ns to end_ns (engine
  // timestamps). Its makespan is charged to the VM. Unknown VMs are ignored.
  virtual void complete(VmId vm, uint64_t start_ns, uint64_t end_ns) = 0;
  // The engine is free at `now_ns`: what next? A dispatched submission leaves
  // the queue; the caller must not ask again before it completes.
  [[nodiscard]] virtual Decision pick(uint64_t now_ns) = 0;

  // Accounting read-outs.
  [[nodiscard]] virtual uint64_t gpu_ns(VmId vm) const = 0;
  [[nodiscard]] virtual size_t queued(VmId vm) const = 0;
  [[nodiscard]] virtual bool any_queued() const = 0;  // some VM has a submission waiting
};

// "fifo", "credit" or "band". An unknown name or a bad parameter is an
// invalid_argument error naming the value.
[[nodiscard]] Result<std::unique_ptr<Policy>> make_policy(std::string_view name, const PolicyParams& params = {});
// The policies by name: the one list (the options, QEMU, the daemon ask it).
[[nodiscard]] bool policy_known(std::string_view name);
std::string policy_names();  // "fifo, credit, band"

}  // namespace vgpu::sched
