// SPDX-License-Identifier: GPL-2.0-or-later
// FIFO: submissions run in global arrival order, whatever their VM or
// length. A VM with long kernels that always has one queued gets the
// engine in proportion to its kernel length: the baseline GPUvm measured.
#include "scheduler/policies.h"
#include "scheduler/policy_base.h"

namespace vgpu::sched {
namespace {

class Fifo final : public PolicyBase {
 public:
  explicit Fifo(const PolicyParams& params) : PolicyBase(params, "fifo") {}

 private:
  Decision choose(uint64_t) override {
    std::optional<VmId> oldest;
    uint64_t oldest_seq = 0;
    for (const auto& [id, v] : vms_) {
      if (v.queue.empty()) continue;
      if (!oldest || v.queue.front().seq < oldest_seq) {
        oldest = id;
        oldest_seq = v.queue.front().seq;
      }
    }
    if (!oldest) return {};
    return Decision{.dispatch = pop(*oldest), .retry_at_ns = std::nullopt};
  }
};

}  // namespace

std::unique_ptr<Policy> make_fifo(const PolicyParams& params) { return std::make_unique<Fifo>(params); }

}  // namespace vgpu::sched
