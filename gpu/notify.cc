// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/notify.h"

namespace vgpu::gpu {
namespace {

// Calls a copy of a handler with the lock released: a handler may take the
// lock itself, or call back in.
template <typename Handler, typename Arg>
void call_unlocked(std::unique_lock<std::mutex>& l, const Handler& handler, const Arg& arg) {
  l.unlock();
  handler(arg);
  l.lock();
}

}  // namespace

void InterruptLine::set_handler(std::function<void(bool)> handler) {
  std::lock_guard l(mutex_);
  handler_ = std::move(handler);
}

void InterruptLine::set_message_handler(MessageFn handler) {
  std::lock_guard l(mutex_);
  message_handler_ = std::move(handler);
}

uint64_t InterruptLine::messages() const {
  std::lock_guard l(mutex_);
  return messages_;
}

bool InterruptLine::asserted() const {
  std::lock_guard l(mutex_);
  return last_;
}

void InterruptLine::update() {
  std::unique_lock l(mutex_);
  if (delivering_) {  // the thread delivering now re-evaluates when done
    again_ = true;
    return;
  }
  delivering_ = true;
  do {
    again_ = false;
    l.unlock();
    const LineState now = state_();
    l.lock();
    for (unsigned v = 0; v < regs::pci::MSI_VECTORS; ++v) {
      if (now.raised[v] == last_raised_[v]) continue;
      last_raised_[v] = now.raised[v];
      if (!now.deliverable) continue;
      ++messages_;
      if (auto message = message_handler_) call_unlocked(l, message, static_cast<regs::pci::MsiVector>(v));
    }
    const bool level = now.level;
    if (level == last_) continue;
    last_ = level;
    // A rising edge is a message on the error vector: whatever raised the
    // line (a runlist, a table error, an MMIO fault) is worth a look.
    if (level) {
      ++messages_;
      if (auto message = message_handler_) call_unlocked(l, message, regs::pci::MsiVector::error);
    }
    if (auto handler = handler_) call_unlocked(l, handler, level);
  } while (again_);
  delivering_ = false;
}

void EventQueue::set_handler(std::function<void(const ChannelEvent&)> handler) {
  std::lock_guard l(mutex_);
  handler_ = std::move(handler);
}

void EventQueue::push(const ChannelEvent& e) {
  std::lock_guard l(mutex_);
  queue_.push_back(e);
}

void EventQueue::flush() {
  std::unique_lock l(mutex_);
  if (delivering_) return;  // the delivering thread drains the queue
  delivering_ = true;
  while (!queue_.empty()) {
    const ChannelEvent e = queue_.front();
    queue_.pop_front();
    if (auto handler = handler_) call_unlocked(l, handler, e);
  }
  delivering_ = false;
}

}  // namespace vgpu::gpu
