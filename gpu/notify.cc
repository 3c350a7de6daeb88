// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/notify.h"

#include <pthread.h>

#include <chrono>

#include "common/spin_lock.h"

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

Deliverer::Deliverer(std::function<void()> deliver, std::function<void()> delivered, uint64_t spin_ns)
    : deliver_(std::move(deliver)), delivered_(std::move(delivered)), spin_ns_(spin_ns), thread_([this] { loop(); }) {}

Deliverer::~Deliverer() {
  {
    std::lock_guard l(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

// The asker's store and the sleeper's are sequentially consistent, each
// followed by a load of the other's flag: either the asker sees the
// thread asleep and wakes it under the mutex, or the thread, before it
// sleeps, sees the ask.
void Deliverer::ask() {
  asked_.store(true);
  if (!sleeping_.load()) return;
  std::lock_guard l(mutex_);
  cv_.notify_one();
}

void Deliverer::loop() {
  pthread_setname_np(pthread_self(), "gpu-deliver");  // for a thread listing (/proc, perf)
  const auto wanted = [this] { return asked_.load(std::memory_order_acquire) || stop_.load(); };
  for (;;) {
    // An ask made while this delivery runs finds the flag clear and brings
    // the next one.
    if (asked_.exchange(false)) {
      deliver_();
      deliveries_.fetch_add(1, std::memory_order_relaxed);
      if (delivered_) delivered_();
      continue;
    }
    if (stop_.load()) return;
    const auto start = std::chrono::steady_clock::now();
    spin_until(wanted, start, start + std::chrono::nanoseconds(spin_ns_));
    if (wanted()) continue;
    std::unique_lock l(mutex_);
    sleeping_.store(true);
    cv_.wait(l, wanted);
    sleeping_.store(false);
  }
}

}  // namespace vgpu::gpu
