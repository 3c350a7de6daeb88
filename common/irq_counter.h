// SPDX-License-Identifier: GPL-2.0-or-later
// Interrupt messages as a driver receives them: a count per vector that a
// thread can sleep on. The waiter reads counts() first, checks the state
// the messages announce (fence memory), and only then sleeps with
// wait(seen, ...): a message sent between the check and the sleep has
// already moved a count, so wait returns at once and no wake-up is lost.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "vgpu/regs.h"

namespace vgpu {

using IrqCounts = std::array<uint64_t, regs::pci::MSI_VECTORS>;

inline uint64_t irq_count(const IrqCounts& c, regs::pci::MsiVector v) { return c[static_cast<size_t>(v)]; }

class IrqCounter {
 public:
  IrqCounts counts() const {
    std::lock_guard l(mutex_);
    return counts_;
  }
  void signal(regs::pci::MsiVector v) {
    {
      std::lock_guard l(mutex_);
      ++counts_[static_cast<size_t>(v)];
    }
    cv_.notify_all();
  }
  // Until counts() != seen (true) or timeout_ns passes (false).
  [[nodiscard]] bool wait(const IrqCounts& seen, uint64_t timeout_ns) const {
    std::unique_lock l(mutex_);
    return cv_.wait_for(l, std::chrono::nanoseconds(timeout_ns), [&] { return counts_ != seen; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  IrqCounts counts_{};
};

}  // namespace vgpu
