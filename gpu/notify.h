// SPDX-License-Identifier: GPL-2.0-or-later
// Delivery of the interrupt line and of channel events to the host side.
// Both are called with no model lock held, one call at a time and in
// order, from whichever thread caused the change (an MMIO caller, the
// PFIFO thread or an engine thread). A handler may call back into the
// model (read32/write32): a change it causes is delivered after it
// returns, by the same thread, never recursively.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "gpu/gpu.h"

namespace vgpu::gpu {

class InterruptLine {
 public:
  // level() computes the line from register state; it takes the model lock.
  explicit InterruptLine(std::function<bool()> level) : level_(std::move(level)) {}
  void set_handler(std::function<void(bool)> handler);
  // Re-evaluate the line and report a change. Call with no model lock held.
  void update();
  bool asserted() const;

 private:
  std::function<bool()> level_;
  mutable std::mutex mutex_;
  std::function<void(bool)> handler_;
  bool last_ = false;
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
