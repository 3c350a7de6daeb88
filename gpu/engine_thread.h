// SPDX-License-Identifier: GPL-2.0-or-later
// One engine (copy or compute) as a thread that runs EngineWork in order.
// PFIFO queues work and gets the result through the job's completion.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/log.h"

namespace vgpu::gpu {

class EngineThread {
 public:
  // A job that throws is the last resort's: logged as an internal error
  // (jobs turn their own failures into channel errors; see Pfifo).
  EngineThread(const char* name, Log& log);
  ~EngineThread();  // finishes the running job, drops queued ones
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  void submit(std::function<void()> job);
  // Runs the job on the calling thread, as the engine's own (counted, its
  // failure logged), if nothing is queued or running; false otherwise. For
  // brief work from the one thread that submits: a hand-over costs more.
  bool run_here_if_idle(const std::function<void()>& job);
  bool idle() const;
  uint64_t jobs_run() const;

 private:
  void loop();
  void run_job(const std::function<void()>& job);

  const char* name_;
  Log& log_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool running_job_ = false;
  bool stop_ = false;
  uint64_t jobs_run_ = 0;
  std::thread thread_;
};

}  // namespace vgpu::gpu
