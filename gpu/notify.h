// SPDX-License-Identifier: GPL-2.0-or-later
// Delivery of the interrupt line and of channel events to the host side.
// Both are called with no model lock held, one call at a time and in
// order, from whichever thread caused the change (an MMIO caller, the
// PFIFO thread or an engine thread). A handler may call back into the
// model (read32/write32): a change it causes is delivered after it
// returns, by the same thread, never recursively.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "gpu/gpu.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

// The line's level, and per message vector how many interrupts of its kind
// the units have raised while enabled (spec §11.6).
struct LineState {
  bool level = false;
  std::array<uint64_t, regs::pci::MSI_VECTORS> raised{};
  bool deliverable = false;  // PMC passes PFIFO's interrupts (INTR_EN_0, INTR_MASK_0)
  bool operator==(const LineState&) const = default;
};

// The interrupt line and the interrupt messages. The line handler hears
// each change of level; the message handler hears each vector whose count
// moved (several interrupts between two updates make one message), and
// the error vector on each rising edge of the line.
class InterruptLine {
 public:
  using MessageFn = std::function<void(regs::pci::MsiVector)>;
  // state() computes the line from register state; it takes the model lock.
  explicit InterruptLine(std::function<LineState()> state) : state_(std::move(state)) {}
  void set_handler(std::function<void(bool)> handler);
  void set_message_handler(MessageFn handler);
  // Re-evaluate the line and the counts, report changes and messages. Call
  // with no model lock held.
  void update();
  bool asserted() const;
  uint64_t messages() const;  // sent so far, every vector

 private:
  std::function<LineState()> state_;
  mutable std::mutex mutex_;
  std::function<void(bool)> handler_;
  MessageFn message_handler_;
  bool last_ = false;
  std::array<uint64_t, regs::pci::MSI_VECTORS> last_raised_{};
  uint64_t messages_ = 0;
  bool delivering_ = false;
  bool again_ = false;
};

class EventQueue {
 public:
  void set_handler(std::function<void(const ChannelEvent&)> handler);
  // Queue an event; may be called under the model lock.
  void push(const ChannelEvent& e);
  // Deliver queued events. Call with no model lock held.
  void flush();

 private:
  std::mutex mutex_;
  std::function<void(const ChannelEvent&)> handler_;
  std::deque<ChannelEvent> queue_;
  bool delivering_ = false;
};

}  // namespace vgpu::gpu
