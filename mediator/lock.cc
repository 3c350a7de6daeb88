// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/lock.h"

#include <algorithm>
#include <vector>

#include "common/spin_lock.h"

namespace vgpu::mediator {
namespace {
thread_local unsigned t_depth = 0;
thread_local std::vector<DeferredSink*> t_sinks;  // usually zero or one
}  // namespace

// Mediator locks are held for microseconds at most, by the guest's trap
// and the host's event handling in turn: spin before sleeping.
MediatorLock::MediatorLock(std::mutex& m) : lock_(m, std::defer_lock) {
  lock_spinning(lock_);
  ++t_depth;
}

MediatorLock::~MediatorLock() {
  lock_.unlock();
  if (--t_depth > 0 || t_sinks.empty()) return;
  // The last mediator lock of this thread is gone: run what waited for it.
  // A sink's work may take and release mediator locks again (and so come
  // back here with an empty list); what it defers meanwhile runs next.
  while (!t_sinks.empty()) {
    DeferredSink* sink = t_sinks.front();
    t_sinks.erase(t_sinks.begin());
    sink->run_deferred_events();
  }
}

bool MediatorLock::held() { return t_depth > 0; }

void MediatorLock::defer(DeferredSink& sink) {
  if (std::find(t_sinks.begin(), t_sinks.end(), &sink) == t_sinks.end()) t_sinks.push_back(&sink);
}

}  // namespace vgpu::mediator
