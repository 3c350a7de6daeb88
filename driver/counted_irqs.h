// SPDX-License-Identifier: GPL-2.0-or-later
// Interrupts of a port whose device lives in this process and sends its
// messages through a handler (the testbed's native and mediated ports):
// each message counts in an IrqCounter, which the driver's waits read.
#pragma once

#include <cstdint>
#include <memory>

#include "common/irq_counter.h"
#include "driver/port.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

template <typename Base>
class WithCountedIrqs : public Base {
 public:
  bool has_interrupts() const override { return true; }
  IrqCounts interrupt_counts() override { return irq_->counts(); }
  bool wait_interrupt(const IrqCounts& seen, uint64_t timeout_ns) override { return irq_->wait(seen, timeout_ns); }

 protected:
  // For the device's set_message_handler. It shares the counter, so a
  // message a device thread is still sending when the port goes is safe.
  auto message_handler() const {
    return [irq = irq_](regs::pci::MsiVector v) { irq->signal(v); };
  }

 private:
  std::shared_ptr<IrqCounter> irq_ = std::make_shared<IrqCounter>();
};

}  // namespace vgpu::driver
