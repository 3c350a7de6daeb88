// SPDX-License-Identifier: GPL-2.0-or-later
// The control socket (vgpuctl): one request line per connection, the
// answer (after the line "vgpud-control 1", protocol.h), then the daemon
// closes it.
//   list                 the GPU's utilization, the VRAM accounting, then a table, one row per VM
//   stats                the same as JSON, every VM's counters, the host's scheduler settings
//   shares               "time_ns scheduler" then "name gpu_ns weight" per VM (vgpuctl plot samples it)
//   set-weight NAME W    the VM's scheduler weight, at once (both VMs of the name during a move)
//   workers              with --backend cuda: one row per VM, its worker's pid, state, restarts,
//                        device and last failure (docs/cuda-worker.md)
// What the VRAM figures are (docs/vgpud.md, "What vgpuctl shows"):
//   total       the GPU's VRAM (--vram)
//   reserved    set aside for the daemon: its own structures and every VM
//               slot's shadow budget (reserved_for(max_vms)); reserved_used
//               is the part of it in use now
//   assigned    VM partitions handed out; free = total - reserved - assigned
//   per VM      its VRAM (what the guest sees), touched (pages it has
//               written), its shadow budget in reserved VRAM and its use
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/text.h"
#include "vgpud/daemon.h"
#include "worker/gpu_device.h"

namespace vgpu::vgpud {
namespace {

// A control client gets this long to send its line.
constexpr timeval CONTROL_TIMEOUT{1, 0};
constexpr size_t MAX_LINE = 256;
constexpr uint64_t SECOND_NS = 1'000'000'000;

unsigned long long mib(uint64_t bytes) { return static_cast<unsigned long long>(bytes / MiB); }
std::string mib_1(uint64_t bytes) { return strfmt("%.1f", static_cast<double>(bytes) / static_cast<double>(MiB)); }

std::string table(const std::vector<VmStats>& vms) {
  std::string out = strfmt("%-16s %8s %6s %8s %11s %10s %8s %6s %8s %9s %7s %8s %10s %9s %9s %6s %-8s\n", "NAME", "PID",
                           "UID", "VRAM_MIB", "TOUCHED_MIB", "SHADOW_MIB", "CHANNELS", "WEIGHT", "SHARE_1S",
                           "SHARE_10S", "UTIL_1S", "UTIL_10S", "GPU_MS", "TRAPPED", "DOORBELLS", "FAULTS", "STATE");
  for (const VmStats& v : vms)
    out += strfmt("%-16s %8d %6u %8llu %11s %10s %8u %6u %8.3f %9.3f %7.3f %8.3f %10.1f %9llu %9llu %6llu %-8s\n",
                  v.name.c_str(), static_cast<int>(v.peer.pid), static_cast<unsigned>(v.peer.uid), mib(v.vram_bytes),
                  mib_1(v.vram_touched_bytes).c_str(),
                  (mib_1(v.shadow_used_bytes) + "/" + std::to_string(mib(v.shadow_bytes))).c_str(), v.channels,
                  v.weight, v.share_1s, v.share_10s, v.utilization_1s, v.utilization_10s,
                  static_cast<double>(v.gpu_ns) / 1e6, static_cast<unsigned long long>(v.counters.trapped()),
                  static_cast<unsigned long long>(v.counters.doorbells),
                  static_cast<unsigned long long>(v.counters.faults), migration_state_name(v.state));
  return out;
}

}  // namespace

Daemon::Totals Daemon::totals() {
  const mediator::HostConfig& c = host_->config();
  Totals t;
  t.vram_bytes = c.vram_bytes;
  t.reserved_bytes = c.reserved_bytes;
  t.reserved_used_bytes = host_->reserved_used();
  t.assigned_bytes = host_->partitions_used();
  t.free_bytes = c.vram_bytes - c.reserved_bytes - t.assigned_bytes;
  std::lock_guard lock(mutex_);
  t.utilization_1s = history_.gpu_utilization(SECOND_NS);
  t.utilization_10s = history_.gpu_utilization(10 * SECOND_NS);
  return t;
}

std::string Daemon::list() {
  const Totals t = totals();
  const std::vector<VmStats> vms = stats();
  return strfmt(
             "GPU  utilization %.3f over 1 s, %.3f over 10 s; scheduler %s\n"
             "VRAM %llu MiB total: %llu MiB reserved for the daemon (%s MiB in use), %llu MiB assigned to %zu VMs, "
             "%llu MiB free\n",
             t.utilization_1s, t.utilization_10s, std::string(host_->scheduler_name()).c_str(), mib(t.vram_bytes),
             mib(t.reserved_bytes), mib_1(t.reserved_used_bytes).c_str(), mib(t.assigned_bytes), vms.size(),
             mib(t.free_bytes)) +
         table(vms);
}

std::string Daemon::stats_json() {
  const Totals t = totals();
  const mediator::HostConfig& c = host_->config();
  nlohmann::ordered_json j;
  j["vram_total_bytes"] = t.vram_bytes;
  j["vram_reserved_bytes"] = t.reserved_bytes;
  j["vram_reserved_used_bytes"] = t.reserved_used_bytes;
  j["vram_assigned_bytes"] = t.assigned_bytes;
  j["vram_free_bytes"] = t.free_bytes;
  j["gpu_utilization_1s"] = t.utilization_1s;
  j["gpu_utilization_10s"] = t.utilization_10s;
  // The host-wide settings the scheduler runs with, as the host has them.
  j["host"] = {{"scheduler", std::string(host_->scheduler_name())},
               {"turn_ms", c.turn_ns / 1'000'000},
               {"max_gpu_ms", c.max_gpu_ms},
               {"slice_blocks", config_.slice_blocks},
               {"ring_ahead", c.ring_ahead},
               {"watchdog_ms", config_.watchdog_ms}};
  // How the host's turns ended (docs/scheduler.md): a hold kept is a dry
  // turn whose VM launched again within turn_hold; an expired one gave the
  // GPU to another VM.
  const mediator::TurnCounts tc = host_->turn_counts();
  j["turns"] = {{"started", tc.started},       {"out_of_time", tc.out_of_time},     {"dry", tc.dry},
                {"holds_kept", tc.holds_kept}, {"holds_expired", tc.holds_expired}, {"host_work", tc.host_work}};
  j["vms"] = nlohmann::ordered_json::array();
  for (const VmStats& v : stats()) {
    // The turn hold's view of the VM: how soon after its channel runs dry
    // its next launch comes, and how long a dry turn of its is held.
    const mediator::Turn::Think think = host_->turn().think(v.vm_id);
    nlohmann::ordered_json counters = v.counters.json();
    // Host-wide, not the VM's: vram_reserved_used_bytes above.
    counters.erase("reserved_vram_bytes");
    j["vms"].push_back({{"name", v.name},
                        {"pid", v.peer.pid},
                        {"uid", v.peer.uid},
                        {"vm_id", v.vm_id},
                        {"vram_bytes", v.vram_bytes},
                        {"vram_touched_bytes", v.vram_touched_bytes},
                        {"shadow_bytes", v.shadow_bytes},
                        {"shadow_used_bytes", v.shadow_used_bytes},
                        {"channels", v.channels},
                        {"weight", v.weight},
                        {"share_1s", v.share_1s},
                        {"share_10s", v.share_10s},
                        {"utilization_1s", v.utilization_1s},
                        {"utilization_10s", v.utilization_10s},
                        {"gpu_ns", v.gpu_ns},
                        {"think",
                         {{"mean_us", think.mean_ns / 1000},
                          {"deviation_us", think.deviation_ns / 1000},
                          {"gaps", think.samples},
                          {"hold_us", think.hold_ns / 1000}}},
                        {"state", migration_state_name(v.state)},
                        {"counters", counters}});
  }
  return j.dump(1) + "\n";
}

std::string Daemon::set_weight(const std::string& name, const std::string& weight) {
  char* end = nullptr;
  errno = 0;
  const long long w = std::strtoll(weight.c_str(), &end, 10);
  if (weight.empty() || *end || errno || w < 1 || w > VGPU_OPT_WEIGHT_MAX)
    return strfmt("error: weight: '%s' is not a whole number in [1, %u]\n", weight.c_str(), VGPU_OPT_WEIGHT_MAX);
  // Every VM of that name: during a move on this daemon, source and destination.
  std::lock_guard lock(mutex_);
  bool found = false;
  for (auto& s : sessions_) {
    std::lock_guard sl(s->lock());
    if (!s->attached() || s->name() != name) continue;
    if (Status st = host_->set_weight(s->vgpu()->id(), static_cast<uint32_t>(w)); !st)
      return "error: " + st.error().message + "\n";
    s->set_weight(static_cast<uint32_t>(w));
    found = true;
  }
  if (!found) return "error: no VM named '" + name + "'\n";
  log(strfmt("vm %s: weight %lld", name.c_str(), w));
  return "ok\n";
}

std::map<uint32_t, std::string> Daemon::attached_names() {
  std::map<uint32_t, std::string> vms;
  std::lock_guard lock(mutex_);
  for (auto& s : sessions_) {
    std::lock_guard sl(s->lock());
    if (s->attached()) vms.emplace(s->vgpu()->id(), s->name());
  }
  return vms;
}

// The names collected under the daemon's lock, the workers asked outside it: a VM waiting on its
// worker holds that worker for up to max-gpu-ms.
std::string Daemon::workers() {
  if (workers_ == nullptr) return "error: the daemon runs no workers (vgpud --backend cuda starts one per VM)\n";
  std::string out = strfmt("%-16s %5s %10s %8s %8s %-24s %s\n", "NAME", "VM_ID", "WORKER_PID", "STATE", "RESTARTS",
                           "DEVICE", "LAST_FAILURE");
  for (const auto& [id, name] : attached_names()) {
    auto i = workers_->info(id);
    if (!i) continue;
    out += strfmt("%-16s %5u %10d %8s %8u %-24s %s\n", name.c_str(), id, i->pid, worker::state_name(i->state),
                  i->restarts, i->device.empty() ? "-" : i->device.c_str(),
                  i->last_failure.empty() ? "-" : i->last_failure.c_str());
  }
  return out;
}

void Daemon::respawn_ended_workers() {
  if (workers_ == nullptr) return;
  const auto ended = workers_->respawn_ended();
  if (ended.empty()) return;
  const auto names = attached_names();
  for (const worker::WorkerGpuDevice::Ended& e : ended) {
    const auto n = names.find(e.id);
    log(strfmt("vm %s: worker %d ended (%s); %s", n != names.end() ? n->second.c_str() : "?", e.old_pid,
               e.failure.reason.c_str(),
               e.new_pid > 0 ? strfmt("worker %d started", e.new_pid).c_str() : "no worker started"));
  }
}

std::string Daemon::control(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  const std::string cmd = words.empty() ? "" : words[0];
  if (cmd == "list" && words.size() == 1) return list();
  if (cmd == "stats" && words.size() == 1) return stats_json();
  if (cmd == "shares" && words.size() == 1) {
    std::string out = strfmt("%llu %s\n", static_cast<unsigned long long>(clock_.now_ns()),
                             std::string(host_->scheduler_name()).c_str());
    for (const VmStats& v : stats())
      out += strfmt("%s %llu %u\n", v.name.c_str(), static_cast<unsigned long long>(v.gpu_ns), v.weight);
    return out;
  }
  if (cmd == "set-weight" && words.size() == 3) return set_weight(words[1], words[2]);
  if (cmd == "set-weight") return "error: usage: set-weight NAME WEIGHT\n";
  if (cmd == "workers" && words.size() == 1) return workers();
  return "error: unknown request '" + line + "' (list, stats, shares, set-weight NAME W, workers)\n";
}

void Daemon::serve_control() {
  UniqueFd fd(accept4(control_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd) return;
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &CONTROL_TIMEOUT, sizeof CONTROL_TIMEOUT);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &CONTROL_TIMEOUT, sizeof CONTROL_TIMEOUT);
  std::string line;
  char c;
  while (line.size() < MAX_LINE && recv(fd.get(), &c, 1, 0) == 1 && c != '\n') line.push_back(c);
  const std::string answer = strfmt("%s %u\n", proto::CONTROL_HELLO, proto::CONTROL_VERSION) + control(line);
  (void)send_all(fd.get(), std::as_bytes(std::span(answer.data(), answer.size())));
}

}  // namespace vgpu::vgpud
