// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/daemon.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <ctime>

#include "common/clock.h"
#include "common/text.h"
#include "vgpud/options.h"
#include "worker/gpu_device.h"

namespace vgpu::vgpud {

namespace {

// This process's executable (vgpud's), for the worker beside it.
std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

}  // namespace

uint32_t default_max_gpu_ms(uint32_t max_vms, uint32_t turn_ms) {
  if (max_vms <= 1) return VGPU_OPT_MAX_GPU_MS_DEFAULT;
  const uint32_t per_vm = OTHERS_WAIT_BUDGET_MS / (max_vms - 1);
  const uint32_t fits = per_vm > turn_ms ? per_vm - turn_ms : 1;
  return std::min<uint32_t>(VGPU_OPT_MAX_GPU_MS_DEFAULT, fits);
}

uint64_t reserved_for(uint32_t max_vms) {
  const mediator::VgpuConfig defaults;
  return 16 * MiB + uint64_t{max_vms} * defaults.shadow_bytes;
}

Result<std::unique_ptr<Daemon>> Daemon::create(const DaemonConfig& config) {
  std::unique_ptr<Daemon> d(new Daemon(config));
  if (d->config_.control_socket.empty()) d->config_.control_socket = config.socket + ".ctl";
  mediator::HostConfig hc;
  hc.vram_bytes = config.vram_bytes;
  hc.reserved_bytes = reserved_for(config.max_vms);
  hc.scheduler = config.scheduler;
  hc.engine_backend = config.engine_backend;
  hc.sched_params = config.sched_params;
  hc.turn_ns = uint64_t{config.turn_ms} * 1'000'000;
  hc.max_gpu_ms = config.max_gpu_ms;
  hc.ring_ahead = config.ring_ahead;
  if (config.engine_backend == gpu::EngineBackend::worker) {
    if (d->config_.worker_binary.empty()) {
      auto found = find_worker_binary(own_executable(), VGPU_WORKER_DEFAULT);
      if (!found) return std::unexpected(found.error());
      d->config_.worker_binary = *found;
    }
    hc.device_factory = d->worker_factory();
    d->log("backend cuda: a worker process per VM on " + config.worker_device + " (" + d->config_.worker_binary + ")");
  }
  hc.log = [raw = d.get()](LogKind kind, const std::string& line) {
    raw->log(std::string(log_kind_name(kind)) + ": " + line);
  };
  if (hc.vram_bytes < hc.reserved_bytes + mediator::VRAM_MIN)
    return fail(Errc::invalid_argument,
                strfmt("--vram: %llu MiB is too small: %u VMs need %llu MiB reserved plus at least %llu MiB for one VM",
                       static_cast<unsigned long long>(hc.vram_bytes / MiB), config.max_vms,
                       static_cast<unsigned long long>(hc.reserved_bytes / MiB),
                       static_cast<unsigned long long>(mediator::VRAM_MIN / MiB)));
  auto host = mediator::Host::create(hc);
  if (!host) return std::unexpected(host.error());
  d->host_ = std::move(*host);
  auto vm_fd = listen_unix(config.socket, config.group);
  if (!vm_fd) return std::unexpected(vm_fd.error());
  d->listen_fd_ = std::move(*vm_fd);
  auto ctl_fd = listen_unix(d->config_.control_socket, config.group);
  if (!ctl_fd) {
    unlink(config.socket.c_str());
    return std::unexpected(ctl_fd.error());
  }
  d->control_fd_ = std::move(*ctl_fd);
  d->wake_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!d->wake_fd_) return fail(Errc::io_error, std::string("eventfd: ") + std::strerror(errno));
  return d;
}

// --backend cuda: the engines' device is one worker process per VM
// (worker/gpu_device.h), started as each VM attaches. Every wait on a
// worker is bounded by max-gpu-ms (0: a day).
gpu::DeviceFactory Daemon::worker_factory() {
  return [this](gpu::Vram& vram) -> Result<std::unique_ptr<gpu::Device>> {
    worker::WorkerOptions o;
    o.binary = config_.worker_binary;
    o.device = config_.worker_device;
    if (access(o.binary.c_str(), X_OK) != 0)
      return fail(Errc::invalid_argument,
                  "--worker-binary: " + o.binary + ": " + std::strerror(errno) + " (the vgpu-worker executable)");
    const auto deadline = config_.max_gpu_ms != 0
                              ? std::chrono::nanoseconds(std::chrono::milliseconds(config_.max_gpu_ms))
                              : std::chrono::nanoseconds(std::chrono::hours(24));
    auto dev = std::make_unique<worker::WorkerGpuDevice>(
        vram, [o](uint32_t) { return o; }, deadline);
    workers_ = dev.get();
    return std::unique_ptr<gpu::Device>(std::move(dev));
  };
}

Daemon::~Daemon() {
  // Every session ends (its vGPU goes) before the host does.
  std::list<std::unique_ptr<Session>> sessions;
  {
    std::lock_guard lock(mutex_);
    sessions.swap(sessions_);
  }
  for (auto& s : sessions) s->stop();
  sessions.clear();
  host_.reset();
  if (listen_fd_) unlink(config_.socket.c_str());
  if (control_fd_) unlink(config_.control_socket.c_str());
}

// Each line with the time (UTC, milliseconds), unless stderr is the
// journal, which stamps lines itself (systemd sets JOURNAL_STREAM).
void log_line(const std::string& line) {
  static const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
  if (journal) {
    std::fprintf(stderr, "vgpud: %s\n", line.c_str());
    return;
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::fprintf(stderr, "%s.%03ldZ vgpud: %s\n", stamp, now.tv_nsec / 1'000'000, line.c_str());
}

void Daemon::log(const std::string& line) { log_line(line); }

void Daemon::stop() {
  const uint64_t stop_bit = uint64_t{1} << 32;
  (void)!write(wake_fd_.get(), &stop_bit, sizeof stop_bit);
}

void Daemon::session_ended() {
  const uint64_t one = 1;
  (void)!write(wake_fd_.get(), &one, sizeof one);
}

std::string Daemon::run(int signal_fd) {
  log(strfmt(
      "serving VMs on %s, control on %s (%llu MiB VRAM, %llu MiB of it reserved for the daemon, scheduler %s, at most %u VMs)",
      config_.socket.c_str(), config_.control_socket.c_str(), static_cast<unsigned long long>(config_.vram_bytes / MiB),
      static_cast<unsigned long long>(reserved_for(config_.max_vms) / MiB), config_.scheduler.c_str(),
      config_.max_vms));
  std::string why;
  while (why.empty()) {
    pollfd fds[4] = {{listen_fd_.get(), POLLIN, 0},
                     {control_fd_.get(), POLLIN, 0},
                     {wake_fd_.get(), POLLIN, 0},
                     {signal_fd, POLLIN, 0}};
    const int n = poll(fds, signal_fd >= 0 ? 4 : 3, static_cast<int>(ShareHistory::PERIOD_NS / 1'000'000));
    if (n < 0 && errno != EINTR) {
      why = std::string("poll: ") + std::strerror(errno);
      break;
    }
    sample();
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) accept_vm();
    if (fds[1].revents & POLLIN) serve_control();
    if (fds[2].revents & POLLIN) {
      uint64_t v = 0;
      (void)!read(wake_fd_.get(), &v, sizeof v);
      reap();
      if (v >> 32) why = "stop requested";
    }
    if (signal_fd >= 0 && (fds[3].revents & POLLIN)) {
      unsigned char sig = 0;
      if (read(signal_fd, &sig, 1) == 1) why = strfmt("signal %s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
    }
  }
  log("shutting down: " + why);
  std::list<std::unique_ptr<Session>> sessions;
  {
    std::lock_guard lock(mutex_);
    sessions.swap(sessions_);
  }
  for (auto& s : sessions) s->stop();
  sessions.clear();  // joins: each session destroys its vGPU
  return why;
}

void Daemon::accept_vm() {
  UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd) return;
  auto cred = peer_cred(fd.get());
  const PeerCred peer = cred ? *cred : PeerCred{};
  std::lock_guard lock(mutex_);
  // Each connection costs a thread: a bound, so that connecting without
  // attaching cannot exhaust the daemon (attached VMs are bounded by
  // --max-vms, refused ones go at once).
  const size_t open = static_cast<size_t>(
      std::count_if(sessions_.begin(), sessions_.end(), [](const auto& s) { return !s->done(); }));
  if (open >= max_connections()) {
    log(strfmt("connection from pid %d uid %u refused: %zu connections open (at most %zu)", static_cast<int>(peer.pid),
               static_cast<unsigned>(peer.uid), open, max_connections()));
    return;
  }
  sessions_.push_back(std::make_unique<Session>(*this, std::move(fd), peer));
  sessions_.back()->start();
}

void Daemon::reap() {
  std::list<std::unique_ptr<Session>> ended;
  {
    std::lock_guard lock(mutex_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if ((*it)->done()) {
        ended.push_back(std::move(*it));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  ended.clear();  // joins outside the lock
}

std::expected<void, std::pair<proto::Refusal, std::string>> Daemon::admit(const std::string& name, bool incoming) {
  std::lock_guard lock(mutex_);
  if (names_.size() >= config_.max_vms)
    return std::unexpected(std::pair{proto::Refusal::too_many_vms,
                                     strfmt("the daemon serves at most %u VMs (--max-vms)", config_.max_vms)});
  if (const size_t held = names_.count(name); held > 0) {
    if (!incoming)
      return std::unexpected(std::pair{proto::Refusal::bad_option, "name: a VM named '" + name + "' is attached"});
    // A migration's destination shares the name with its source, one at a time.
    bool pending = held > 1;
    for (auto& s : sessions_) {
      std::lock_guard sl(s->lock());
      pending = pending || (s->attached() && s->name() == name && s->incoming());
    }
    if (pending)
      return std::unexpected(
          std::pair{proto::Refusal::bad_option,
                    "name: VM '" + name + "' already has an incoming migration's destination attached"});
  }
  names_.insert(name);
  return {};
}

void Daemon::release(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (auto it = names_.find(name); it != names_.end()) names_.erase(it);
}

void Daemon::sample() {
  const uint64_t now = clock_.now_ns();
  if (now < next_sample_ns_) return;
  next_sample_ns_ = now + ShareHistory::PERIOD_NS;
  respawn_ended_workers();
  std::map<uint32_t, uint64_t> used;
  std::lock_guard lock(mutex_);
  for (auto& s : sessions_) {
    std::lock_guard sl(s->lock());
    if (s->attached()) used[s->vgpu()->id()] = host_->gpu_ns(s->vgpu()->id());
  }
  history_.sample(now, used);
}

std::vector<VmStats> Daemon::stats() {
  std::vector<VmStats> out;
  std::lock_guard lock(mutex_);
  for (auto& s : sessions_) {
    std::lock_guard sl(s->lock());
    if (s->attached()) out.push_back(s->stats(*host_, history_));
  }
  return out;
}

}  // namespace vgpu::vgpud
