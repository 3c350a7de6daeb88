// SPDX-License-Identifier: GPL-2.0-or-later
// A fixed pool of threads taking tiles from a list of jobs, one job per
// for_each_tile call in progress (tile_pool.h).
#include "gpu/kernels/tile_pool.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <list>
#include <mutex>
#include <thread>

namespace vgpu::gpu::kernels {
namespace {

struct Job {
  const std::function<void(uint64_t)>* body;
  const TileStop* stop;
  uint64_t first, next, end;
  unsigned running = 0;  // tiles taken and not yet done
  std::exception_ptr error;
  std::condition_variable done;
};

class Pool {
 public:
  Pool() : workers_(static_cast<unsigned>(std::max(1, openblas_get_num_threads()))) {
    openblas_set_num_threads(1);
    // Detached: the pool is never destroyed (pool()), so its threads never
    // outlive it; they wait for tiles until the process exits.
    for (unsigned i = 1; i < workers_; ++i) std::thread([this] { work(); }).detach();
  }

  unsigned workers() const { return workers_; }

  // Returns the end of the tiles that ran.
  uint64_t run(uint64_t first, uint64_t end, const std::function<void(uint64_t)>& body, const TileStop& stop) {
    Job job{&body, stop ? &stop : nullptr, first, first, end};
    std::unique_lock lock(mutex_);
    const auto it = jobs_.insert(jobs_.end(), &job);
    wake_.notify_all();
    while (open(job)) run_one(job, lock);
    job.done.wait(lock, [&] { return job.running == 0; });
    jobs_.erase(it);
    if (job.error) std::rethrow_exception(job.error);
    return job.next;
  }

  // Whether the job has a tile to take, after asking its stop (under the
  // lock): a stopped job takes no more.
  static bool open(Job& job) {
    if (job.next < job.end && job.stop != nullptr && job.next > job.first && (*job.stop)(job.next - job.first))
      job.end = job.next;
    return job.next < job.end;
  }

 private:
  // Takes the job's next tile and runs it with the lock released.
  void run_one(Job& job, std::unique_lock<std::mutex>& lock) {
    const uint64_t i = job.next++;
    ++job.running;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*job.body)(i);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) {
      if (!job.error) job.error = error;
      job.next = job.end;  // start no more tiles of a failed job
    }
    if (--job.running == 0 && job.next >= job.end) job.done.notify_all();
  }

  Job* pending() {
    const auto it = std::find_if(jobs_.begin(), jobs_.end(), [](Job* j) { return open(*j); });
    return it == jobs_.end() ? nullptr : *it;
  }

  // The job that the wait found is the one run: asking pending() again
  // asks the jobs' stops again, and a stop by time may have come meanwhile
  // (then pending() is null: a worker thread dereferenced it and crashed).
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      Job* job = nullptr;
      wake_.wait(lock, [&] { return (job = pending()) != nullptr; });
      run_one(*job, lock);
    }
  }

  const unsigned workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Job*> jobs_;
};

std::atomic<uint64_t> jobs_started{0};

Pool& pool() {
  static Pool* const p = new Pool;  // never destroyed: its threads run until exit
  return *p;
}

}  // namespace

unsigned tile_workers() { return pool().workers(); }

uint64_t tile_jobs() { return jobs_started.load(); }

void for_each_tile(uint64_t first, uint64_t end, const std::function<void(uint64_t)>& body) {
  for_each_tile(first, end, body, TileStop{});
}

uint64_t for_each_tile(uint64_t first, uint64_t end, const std::function<void(uint64_t)>& body, const TileStop& stop) {
  Pool& p = pool();  // sets OpenBLAS to one thread before any tile runs
  if (first >= end) return first;
  jobs_started.fetch_add(1);
  if (end - first == 1 || p.workers() == 1) {
    uint64_t i = first;
    for (; i < end && (i == first || !stop || !stop(i - first)); ++i) body(i);
    return i;
  }
  return p.run(first, end, body, stop);
}

void with_all_blas_threads(const std::function<void()>& f) {
  openblas_set_num_threads(static_cast<int>(tile_workers()));
  f();
  openblas_set_num_threads(1);
}

}  // namespace vgpu::gpu::kernels
