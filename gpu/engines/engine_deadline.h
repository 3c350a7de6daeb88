// SPDX-License-Identifier: GPL-2.0-or-later
// The end of an engine operation's time (PFIFO ENGINE_TIMEOUT,
// docs/spec/vgpu.md §11.4): work that would run past it stops there and
// its channel gets error timeout, as a GPU's timeout detection would end
// it. Divisible work (copy lines, pieces) looks at expired() between
// pieces; a spin stops at the deadline; a kernel (whose arithmetic is
// not divided) is timed out when its modeled cost or its real time runs
// past it.
#pragma once

#include <cstdint>

#include "gpu/engines/class_object.h"

namespace vgpu::gpu {

class EngineDeadline {
 public:
  // The operation starts at start_ns with the context's budget.
  EngineDeadline(const ChannelContext& ctx, uint64_t start_ns) : clock_(ctx.clock) {
    if (ctx.engine_budget_ns) at_ns_ = start_ns + *ctx.engine_budget_ns;
  }

  bool expired() const { return at_ns_ != NONE && clock_.now_ns() >= at_ns_; }

  // Clock::sleep_ns (a spin), cut at the deadline: false if it was cut.
  [[nodiscard]] bool sleep(uint64_t start_ns, uint64_t ns) {
    if (at_ns_ != NONE && start_ns + ns > at_ns_) {
      const uint64_t now = clock_.now_ns();
      clock_.sleep_ns(at_ns_ > now ? at_ns_ - now : 0);
      return false;
    }
    clock_.sleep_ns(ns);
    return true;
  }

  // Clock::charge of an operation's modeled cost, cut at the deadline:
  // false if the cost, or the real time the work took, ran past it (the
  // operation did not complete in time).
  [[nodiscard]] bool charge(uint64_t start_ns, uint64_t cost_ns) {
    if (at_ns_ != NONE && start_ns + cost_ns > at_ns_) {
      clock_.charge(start_ns, at_ns_ > start_ns ? at_ns_ - start_ns : 0);
      return false;
    }
    clock_.charge(start_ns, cost_ns);
    return !expired();
  }

 private:
  static constexpr uint64_t NONE = ~uint64_t{0};
  Clock& clock_;
  uint64_t at_ns_ = NONE;
};

}  // namespace vgpu::gpu
