// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/worker_host.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "common/launch_trace.h"

namespace vgpu::worker {
namespace {

using Clock = std::chrono::steady_clock;
// A wait spins this long on the fence word, then yields this long, then
// sleeps on the worker's pidfd (which also tells of its exit).
constexpr auto SPIN = std::chrono::microseconds(20);
constexpr auto YIELD = std::chrono::microseconds(2000);
constexpr int SLEEP_MS = 1;
constexpr int HIGH_FD = 64;  // above SHM_FD and BELL_FD

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

// worker_traffic()'s counts, in its fields' order.
enum Traffic { COMMANDS, FENCED, BELLS, WAITS, WAITS_YIELDED, WAITS_SLEPT, TRAFFIC_COUNT };
std::atomic<uint64_t> traffic[TRAFFIC_COUNT];

void count(Traffic t) {
  if (LaunchTrace::enabled()) traffic[t].fetch_add(1, std::memory_order_relaxed);
}

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

WorkerTraffic worker_traffic() {
  auto get = [](Traffic t) { return traffic[t].load(std::memory_order_relaxed); };
  return WorkerTraffic{get(COMMANDS), get(FENCED), get(BELLS), get(WAITS), get(WAITS_YIELDED), get(WAITS_SLEPT)};
}

Result<std::unique_ptr<WorkerHost>> WorkerHost::spawn(WorkerOptions options) {
  std::unique_ptr<WorkerHost> h(new WorkerHost(std::move(options)));
  if (auto s = h->start(); !s) return std::unexpected(s.error());
  return h;
}

WorkerHost::~WorkerHost() {
  if (pid_ > 0) {
    Command stop{};
    stop.op = Op::stop;
    if (ring_push(shared_->region(), stop)) {
      uint64_t one = 1;
      ssize_t n = ::write(bell_fd_, &one, sizeof one);
      (void)n;
    }
    pollfd p{pidfd_, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    reap();
  }
  if (bell_fd_ >= 0) close(bell_fd_);
}

// A region the last worker left (it is reaped): its ring emptied, its
// fences, state and error cleared. The bulk window stays where it is, so
// bytes a caller wrote before the next worker started are still there.
namespace {
void reset_region(Region& r) {
  r.header.state.store(static_cast<uint32_t>(WorkerState::starting));
  r.header.pid.store(0);
  r.header.error.set.store(0);
  r.header.refusal.seq.store(0);
  memset(r.header.device_name, 0, sizeof r.header.device_name);
  r.head.value.store(0);
  r.head.sleeping.store(0);
  r.tail.value.store(0);
  for (auto& f : r.fence) f.store(0);
}

// Starts argv[0] with the region at SHM_FD, the doorbell at BELL_FD and
// nothing else of ours: posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK),
// so a large caller such as QEMU is not copied page table by page table
// as fork would), every descriptor from BELL_FD + 1 up closed in the
// child (QEMU's KVM, vhost and tap descriptors are not all CLOEXEC), the
// signal mask emptied and the usual signals back to their defaults (QEMU
// blocks and ignores some; ignored ones would survive exec).
Result<pid_t> spawn_worker(std::vector<char*>& argv, int shm, int bell) {
  // Moved above both numbers first: the region's descriptor may be 3 or 4,
  // and dup2 onto itself would keep its CLOEXEC.
  int high_shm = fcntl(shm, F_DUPFD_CLOEXEC, HIGH_FD);
  int high_bell = fcntl(bell, F_DUPFD_CLOEXEC, HIGH_FD);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, high_shm, SHM_FD);
  posix_spawn_file_actions_adddup2(&fa, high_bell, BELL_FD);
  posix_spawn_file_actions_addclosefrom_np(&fa, BELL_FD + 1);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = high_shm < 0 || high_bell < 0 ? errno : posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (high_shm >= 0) close(high_shm);
  if (high_bell >= 0) close(high_bell);
  if (rc != 0) return fail(Errc::io_error, std::string("worker: cannot run ") + argv[0] + ": " + strerror(rc));
  return pid;
}

}  // namespace

// Spawns the worker with the VM's region (reset) and a new doorbell, and waits
// for it to say it is ready (its CUDA context made).
Status WorkerHost::start() {
  if (!shared_) {
    auto shared = Shared::create();
    if (!shared) return std::unexpected(shared.error().context("worker"));
    shared_ = std::move(*shared);
  }
  reset_region(shared_->region());
  int bell = eventfd(0, EFD_CLOEXEC);
  if (bell < 0) return fail(Errc::io_error, std::string("worker: eventfd: ") + strerror(errno));
  std::vector<std::string> args{options_.binary, "--device", options_.device, "--parent", std::to_string(getpid())};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto spawned = spawn_worker(argv, shared_->fd(), bell);
  if (!spawned) {
    close(bell);
    return std::unexpected(spawned.error());
  }
  const pid_t pid = *spawned;
  if (bell_fd_ >= 0) close(bell_fd_);
  bell_fd_ = bell;
  pid_ = pid;
  pidfd_ = pidfd_open(pid);
  generation_++;
  Region& r = shared_->region();
  auto until = Clock::now() + options_.start_timeout;
  while (r.header.state.load(std::memory_order_acquire) != static_cast<uint32_t>(WorkerState::ready)) {
    pollfd p{pidfd_, POLLIN, 0};
    if (poll(&p, 1, SLEEP_MS) > 0) {
      WorkerFailure f = failure_after_exit(0);
      return fail(Errc::device_error, "worker " + options_.binary + ": did not start: " + f.reason);
    }
    if (Clock::now() > until) {
      syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
      reap();
      return fail(Errc::timeout, "worker " + options_.binary + ": not ready after " +
                                     std::to_string(options_.start_timeout.count()) + " ms");
    }
  }
  return {};
}

void WorkerHost::reap() {
  if (pid_ <= 0) return;
  int status = 0;
  waitpid(pid_, &status, 0);
  close(pidfd_);
  pid_ = -1;
  pidfd_ = -1;
}

// The reason a worker that exited gives (reaping it): the error it wrote,
// else how it ended.
WorkerFailure WorkerHost::failure_after_exit(int) {
  int status = 0;
  waitpid(pid_, &status, 0);
  close(pidfd_);
  pid_ = -1;
  pidfd_ = -1;
  const ErrorRecord& e = shared_->region().header.error;
  if (e.set.load(std::memory_order_acquire)) {
    std::string msg(e.message, strnlen(e.message, sizeof e.message));
    auto err = e.cuda_code == CUDA_ILLEGAL_ADDRESS ? regs::ChannelError::mmu_fault : regs::ChannelError::kernel_error;
    std::string code = e.cuda_code ? " (CUDA error " + std::to_string(e.cuda_code) + ")" : "";
    return WorkerFailure{err, e.addr, "worker: " + msg + code};
  }
  return WorkerFailure{regs::ChannelError::kernel_error, 0, "worker died: " + exit_text(status)};
}

void WorkerHost::record_failure(const WorkerFailure& f) {
  last_ = f;
  last_generation_ = generation_;
}

// Ends the worker (if it runs) and counts a restart; over the limit the
// VM gets no more workers.
void WorkerHost::end_worker(const std::string& why) {
  if (pid_ > 0) {
    syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    reap();
  }
  if (last_generation_ != generation_) record_failure(WorkerFailure{regs::ChannelError::kernel_error, 0, why});
  auto now = Clock::now();
  restart_times_.push_back(now);
  while (!restart_times_.empty() && now - restart_times_.front() > options_.respawn_window) restart_times_.pop_front();
  if (restart_times_.size() > options_.respawn_limit && !gone_) {
    gone_ = true;
    last_.reason += "; worker restarted too often, not restarted again";
  }
}

Status WorkerHost::ensure_running() {
  if (gone_) return fail(Errc::device_error, "worker: " + last_.reason);
  if (pid_ > 0) return {};
  restarts_++;
  if (auto s = start(); !s) {
    gone_ = true;
    last_.reason += "; respawn failed: " + s.error().message;
    return std::unexpected(s.error());
  }
  return {};
}

std::optional<WorkerFailure> WorkerHost::reap_if_exited() {
  if (pid_ <= 0 || !exited(pidfd_)) return std::nullopt;
  WorkerFailure f = failure_after_exit(0);
  record_failure(f);
  end_worker(f.reason);
  return f;
}

void WorkerHost::kill_and_respawn(const std::string& why) {
  end_worker(why);
  (void)ensure_running();
}

Result<Ticket> WorkerHost::submit(Command c, bool fence) {
  if (c.stream >= NUM_STREAMS) return fail(Errc::invalid_argument, "worker: stream out of range");
  if (auto s = ensure_running(); !s) return fail(Errc::device_error, "worker: " + last_.reason);
  c.seq = ++next_seq_[c.stream];
  c.flags = fence ? (c.flags | FENCE) : (c.flags & ~FENCE);
  Region& r = shared_->region();
  while (!ring_push(r, c)) {
    if (exited(pidfd_)) return fail(Errc::device_error, "worker: exited with its ring full");
    std::this_thread::yield();
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  count(COMMANDS);
  if (fence) count(FENCED);
  if (r.head.sleeping.load(std::memory_order_seq_cst)) {
    count(BELLS);
    uint64_t one = 1;
    ssize_t n = ::write(bell_fd_, &one, sizeof one);
    (void)n;
  }
  const Ticket t{generation_, c.stream, c.seq};
  last_fenced_[c.stream] = fence ? std::optional<Ticket>(t) : std::nullopt;
  return t;
}

std::optional<Ticket> WorkerHost::last_fenced(uint32_t stream) const {
  if (stream >= NUM_STREAMS || pid_ <= 0) return std::nullopt;
  const std::optional<Ticket>& t = last_fenced_[stream];
  if (!t || t->generation != generation_) return std::nullopt;
  return t;
}

std::expected<void, WorkerFailure> WorkerHost::wait(const Ticket& t, std::chrono::nanoseconds deadline) {
  if (t.generation != generation_ || pid_ <= 0) {
    if (t.generation == last_generation_ || gone_) return std::unexpected(last_);
    return std::unexpected(WorkerFailure{regs::ChannelError::kernel_error, 0, "worker restarted since the command"});
  }
  Region& r = shared_->region();
  auto start = Clock::now();
  auto until = start + deadline;
  count(WAITS);
  bool yielded = false, slept = false;
  for (;;) {
    if (fence_passed(r.fence[t.stream].load(std::memory_order_acquire), t.seq)) return {};
    auto now = Clock::now();
    if (now - start < SPIN) continue;
    if (exited(pidfd_)) {
      WorkerFailure f = failure_after_exit(0);
      record_failure(f);
      end_worker(f.reason);
      return std::unexpected(f);
    }
    if (now > until) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      WorkerFailure f{regs::ChannelError::timeout, 0,
                      "worker: stream " + std::to_string(t.stream) + " ended after " + std::to_string(ms) +
                          " ms (past its deadline): worker killed"};
      record_failure(f);
      end_worker(f.reason);
      return std::unexpected(f);
    }
    if (now - start < YIELD) {
      if (!std::exchange(yielded, true)) count(WAITS_YIELDED);
      std::this_thread::yield();
    } else {
      if (!std::exchange(slept, true)) count(WAITS_SLEPT);
      pollfd p{pidfd_, POLLIN, 0};
      poll(&p, 1, SLEEP_MS);
    }
  }
}

std::optional<std::string> WorkerHost::refusal(const Ticket& t) const {
  const ModuleRefusal& m = shared_->region().header.refusal;
  if (t.generation != generation_ || m.seq.load(std::memory_order_acquire) != t.seq || m.stream != t.stream)
    return std::nullopt;
  std::string code = m.cuda_code ? " (CUDA error " + std::to_string(m.cuda_code) + ")" : "";
  return std::string(m.message, strnlen(m.message, sizeof m.message)) + code;
}

WorkerInfo WorkerHost::info() const {
  WorkerState s = gone_ || pid_ <= 0 ? WorkerState::dead
                                     : static_cast<WorkerState>(shared_->region().header.state.load());
  std::string dev = shared_ ? std::string(shared_->region().header.device_name) : "";
  return WorkerInfo{pid_, s, restarts_, dev, last_.reason};
}

}  // namespace vgpu::worker
