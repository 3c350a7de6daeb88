// SPDX-License-Identifier: GPL-2.0-or-later
// Mediator locks, and the GPU events that must wait until none is held.
//
// The GPU model delivers a channel event on whichever thread caused it,
// and that can be a thread inside the mediator: a register write the host
// makes while holding its own mutex, or a vGPU's, flushes the events the
// model's threads queued meanwhile. The host's event handler takes those
// same mutexes (to find the owning vGPU, to update its state), so handling
// the event there would deadlock on a lock the thread already holds, or
// invert the vGPU-then-host lock order against another thread.
//
// So every mediator mutex is taken through MediatorLock, which counts the
// locks this thread holds. An event that arrives while the count is not
// zero is queued by its sink and handled when the thread releases its last
// mediator lock, with nothing held.
#pragma once

#include <mutex>

namespace vgpu::mediator {

// Something with queued work to run once the current thread holds no
// mediator lock (the host's channel events).
class DeferredSink {
 public:
  virtual void run_deferred_events() = 0;

 protected:
  ~DeferredSink() = default;
};

class MediatorLock {
 public:
  explicit MediatorLock(std::mutex& m);
  ~MediatorLock();
  MediatorLock(const MediatorLock&) = delete;
  MediatorLock& operator=(const MediatorLock&) = delete;

  // Whether this thread holds a mediator lock now.
  static bool held();
  // Run sink's deferred work when this thread releases its last mediator
  // lock. Call only while held().
  static void defer(DeferredSink& sink);

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace vgpu::mediator
