// SPDX-License-Identifier: GPL-2.0-or-later
// One engine (copy or compute) as a thread that runs EngineWork in order.
// PFIFO queues work and gets the result through the job's completion.
#pragma once

#include <atomic>
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
  // idle_spin_ns: after a job, look for the next one this long before
  // sleeping (0: sleep at once). For engines whose work is issued to a
  // real GPU (docs/cuda.md, "Hand-overs"): the thread only issues and
  // waits, and a stream of launches then never waits for its wake-up.
  EngineThread(const char* name, Log& log, uint64_t idle_spin_ns = 0);
  ~EngineThread();  // finishes the running job, drops queued ones
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  void submit(std::function<void()> job);
  // Runs the job on the calling thread, as the engine's own (counted, its
  // failure logged), if nothing is queued or running; false otherwise. For
  // brief work from the one thread that submits: a hand-over costs more.
  bool run_here_if_idle(const std::function<void()>& job);
  bool idle() const;
  bool spins() const { return idle_spin_ns_ != 0; }
  uint64_t jobs_run() const;

 private:
  void loop();
  void run_job(const std::function<void()>& job);

  const char* name_;
  Log& log_;
  const uint64_t idle_spin_ns_;
  std::atomic<size_t> queued_{0};  // queue_.size(), readable while spinning
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool running_job_ = false;
  bool stop_ = false;
  uint64_t jobs_run_ = 0;
  std::thread thread_;
};

}  // namespace vgpu::gpu
