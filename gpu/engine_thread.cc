// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engine_thread.h"

#include <pthread.h>

#include <chrono>
#include <string>

#include "common/launch_trace.h"
#include "common/spin_lock.h"

namespace vgpu::gpu {

EngineThread::EngineThread(const char* name, Log& log, uint64_t idle_spin_ns)
    : name_(name), log_(log), idle_spin_ns_(idle_spin_ns), thread_([this] { loop(); }) {}

EngineThread::~EngineThread() {
  {
    std::lock_guard l(mutex_);
    stop_ = true;
    queue_.clear();
    queued_.store(0);
  }
  cv_.notify_all();
  thread_.join();
}

void EngineThread::submit(std::function<void()> job) {
  {
    std::lock_guard l(mutex_);
    queue_.push_back(std::move(job));
    queued_.store(queue_.size(), std::memory_order_release);
  }
  LaunchTrace::mark(LaunchPhase::job_queued);
  cv_.notify_all();
}

bool EngineThread::run_here_if_idle(const std::function<void()>& job) {
  {
    std::lock_guard l(mutex_);
    if (stop_ || !queue_.empty() || running_job_) return false;
    running_job_ = true;
  }
  LaunchTrace::mark(LaunchPhase::job_started);
  run_job(job);
  {
    std::lock_guard l(mutex_);
    running_job_ = false;
    ++jobs_run_;
  }
  return true;
}

void EngineThread::run_job(const std::function<void()>& job) {
  try {
    job();
  } catch (const std::exception& e) {
    try {
      log_.internal_error(std::string(name_) + " engine: a job failed: " + e.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

bool EngineThread::idle() const {
  std::lock_guard l(mutex_);
  return queue_.empty() && !running_job_;
}

uint64_t EngineThread::jobs_run() const {
  std::lock_guard l(mutex_);
  return jobs_run_;
}

void EngineThread::loop() {
  // Named for a thread listing (/proc, perf): "engine-compute" (15 chars at most).
  pthread_setname_np(pthread_self(), ("engine-" + std::string(name_)).substr(0, 15).c_str());
  std::unique_lock l(mutex_);
  for (;;) {
    if (idle_spin_ns_ != 0 && !stop_ && queue_.empty()) {
      l.unlock();
      const auto start = std::chrono::steady_clock::now();
      spin_until([this] { return queued_.load(std::memory_order_acquire) != 0; }, start,
                 start + std::chrono::nanoseconds(idle_spin_ns_));
      l.lock();
    }
    cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto job = std::move(queue_.front());
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
    running_job_ = true;
    LaunchTrace::mark(LaunchPhase::job_started);
    l.unlock();
    run_job(job);
    l.lock();
    running_job_ = false;
    ++jobs_run_;
  }
}

}  // namespace vgpu::gpu
