// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engine_thread.h"

namespace vgpu::gpu {

EngineThread::EngineThread(const char* name, Log& log) : name_(name), log_(log), thread_([this] { loop(); }) {}

EngineThread::~EngineThread() {
  {
    std::lock_guard l(mutex_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void EngineThread::submit(std::function<void()> job) {
  {
    std::lock_guard l(mutex_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
}

bool EngineThread::run_here_if_idle(const std::function<void()>& job) {
  {
    std::lock_guard l(mutex_);
    if (stop_ || !queue_.empty() || running_job_) return false;
    running_job_ = true;
  }
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
  std::unique_lock l(mutex_);
  for (;;) {
    cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto job = std::move(queue_.front());
    queue_.pop_front();
    running_job_ = true;
    l.unlock();
    run_job(job);
    l.lock();
    running_job_ = false;
    ++jobs_run_;
  }
}

}  // namespace vgpu::gpu
