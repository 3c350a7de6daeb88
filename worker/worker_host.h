// SPDX-License-Identifier: GPL-2.0-or-later
// The mediator's handle on one VM's worker process (docs/cuda-worker.md):
// spawns it, submits commands, waits for their fences with a deadline,
// kills a worker that is late and respawns one that failed or died, and
// says what happened in the terms a channel error needs.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "common/error.h"
#include "vgpu/regs.h"
#include "worker/ipc.h"

namespace vgpu::worker {

struct WorkerOptions {
  std::string binary;                   // the vgpu-worker executable
  std::string device = "cuda";          // cuda or fake
  std::vector<std::string> extra_args;  // e.g. the fake worker's --die-at-seq
  std::chrono::milliseconds start_timeout{10'000};
  // More than respawn_limit restarts within respawn_window: no more.
  uint32_t respawn_limit = 5;
  std::chrono::milliseconds respawn_window{10'000};
};

// A command's place: the worker's generation (one per spawn) and its fence.
struct Ticket {
  uint64_t generation;
  uint32_t stream, seq;
};

// Why a wait failed, as the VM's channel sees it.
struct WorkerFailure {
  regs::ChannelError error;  // timeout, mmu_fault or kernel_error
  uint64_t addr;             // the faulting VA where known
  std::string reason;
};

struct WorkerInfo {
  int pid;
  WorkerState state;
  uint32_t restarts;
  std::string device;
  std::string last_failure;
};

// What the mediator's side asked of its workers, summed over this process
// (docs/cuda-worker.md, "Launch-to-fence"): the ring hand-overs and fence
// round trips of a launch. Counted only while the launch trace is on
// (LaunchTrace::enabled); off, a count is one relaxed load.
struct WorkerTraffic {
  uint64_t commands = 0;       // commands pushed to a worker's ring
  uint64_t fenced = 0;         // of them with FENCE: a fence the GPU writes
  uint64_t bells = 0;          // eventfd writes: the worker slept and was woken
  uint64_t waits = 0;          // fence waits: round trips to the worker and back
  uint64_t waits_yielded = 0;  // waits that spun past SPIN and yielded the CPU
  uint64_t waits_slept = 0;    // waits that slept on the worker's pidfd
};
WorkerTraffic worker_traffic();

class WorkerHost {
 public:
  static Result<std::unique_ptr<WorkerHost>> spawn(WorkerOptions options);
  ~WorkerHost();
  WorkerHost(const WorkerHost&) = delete;
  WorkerHost& operator=(const WorkerHost&) = delete;

  // Queues a command (its sequence is set here) and rings the worker if
  // it sleeps. With `fence` false the GPU writes no fence for it: wait for
  // a later fenced command of the same stream. Fails when the worker is
  // gone for good.
  Result<Ticket> submit(Command c, bool fence = true);
  // Waits until the ticket's fence passed, the deadline passed (the
  // worker is killed: timeout) or the worker failed. A failure returns as
  // soon as the worker is reaped; the next worker starts at the next
  // submit or ensure_running() (so the VM hears of its error first).
  std::expected<void, WorkerFailure> wait(const Ticket& t, std::chrono::nanoseconds deadline);
  // The stream's last command submitted to this worker, if it carried
  // FENCE: waiting for it waits for everything before it on the stream.
  std::optional<Ticket> last_fenced(uint32_t stream) const;
  // Why the worker's device refused the load_module of `t` (its fence
  // passed; the worker goes on), or nullopt: it was loaded.
  std::optional<std::string> refusal(const Ticket& t) const;
  // The bulk window the next command reads from or writes to.
  std::byte* bulk() { return shared_->region().bulk; }
  WorkerInfo info() const;
  // info().pid without the strings: the running worker's pid, or <= 0.
  int pid() const { return pid_; }
  // Ends the worker now (SIGKILL) and starts another.
  void kill_and_respawn(const std::string& why);
  // A worker that exited between commands (killed, crashed): reaped and
  // counted as a failure, as a wait would; nullopt while it runs.
  std::optional<WorkerFailure> reap_if_exited();
  // Starts a worker if none runs (after a failure); an error when the VM
  // restarted too often or the start failed.
  Status ensure_running();

 private:
  explicit WorkerHost(WorkerOptions o) : options_(std::move(o)) {}
  Status start();
  void reap();
  WorkerFailure failure_after_exit(int status);
  void record_failure(const WorkerFailure& f);
  void end_worker(const std::string& why);

  WorkerOptions options_;
  std::unique_ptr<Shared> shared_;
  int bell_fd_ = -1;
  int pidfd_ = -1;
  int pid_ = -1;
  uint64_t generation_ = 0;
  uint32_t next_seq_[NUM_STREAMS] = {};
  std::optional<Ticket> last_fenced_[NUM_STREAMS];  // the stream's last command, when fenced
  uint32_t restarts_ = 0;
  bool gone_ = false;  // over the respawn limit
  std::deque<std::chrono::steady_clock::time_point> restart_times_;
  WorkerFailure last_{regs::ChannelError::none, 0, ""};
  uint64_t last_generation_ = 0;  // the generation last_ ended
};

}  // namespace vgpu::worker
