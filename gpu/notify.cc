// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/notify.h"

namespace vgpu::gpu {

void InterruptLine::set_handler(std::function<void(bool)> handler) {
  std::lock_guard l(mutex_);
  handler_ = std::move(handler);
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
    const bool level = level_();
    l.lock();
    if (level == last_) continue;
    last_ = level;
    auto handler = handler_;
    if (!handler) continue;
    l.unlock();
    handler(level);
    l.lock();
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
    auto handler = handler_;
    if (!handler) continue;
    l.unlock();
    handler(e);
    l.lock();
  }
  delivering_ = false;
}

}  // namespace vgpu::gpu
