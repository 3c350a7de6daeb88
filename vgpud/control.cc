// SPDX-License-Identifier: GPL-2.0-or-later
// The control socket (vgpuctl): one request line per connection, the
// answer, then the daemon closes it.
//   list                 a table, one row per VM
//   stats                the same as JSON, and the host's scheduler settings
//   shares               "time_ns scheduler" then "name gpu_ns weight" per VM (vgpuctl plot samples it)
//   set-weight NAME W    the VM's scheduler weight, at once
#include <sys/socket.h>

#include <sstream>

#include "common/text.h"
#include "vgpud/daemon.h"

namespace vgpu::vgpud {
namespace {

// A control client gets this long to send its line.
constexpr timeval CONTROL_TIMEOUT{1, 0};
constexpr size_t MAX_LINE = 256;

std::string ms(uint64_t ns) { return strfmt("%.1f", static_cast<double>(ns) / 1e6); }

std::string table(const std::vector<VmStats>& vms) {
  std::string out = strfmt("%-16s %8s %6s %9s %8s %6s %8s %8s %12s %10s %10s %8s\n", "NAME", "PID", "UID", "VRAM_MIB",
                           "CHANNELS", "WEIGHT", "SHARE_1S", "SHARE_10S", "BUSY_MS", "TRAPPED", "DOORBELLS", "FAULTS");
  for (const VmStats& v : vms)
    out += strfmt("%-16s %8d %6u %9llu %8u %6u %8.3f %8.3f %12s %10llu %10llu %8llu\n", v.name.c_str(),
                  static_cast<int>(v.peer.pid), static_cast<unsigned>(v.peer.uid),
                  static_cast<unsigned long long>(v.vram_bytes / MiB), v.channels, v.weight, v.share_1s, v.share_10s,
                  ms(v.gpu_ns).c_str(), static_cast<unsigned long long>(v.counters.trapped()),
                  static_cast<unsigned long long>(v.counters.doorbells),
                  static_cast<unsigned long long>(v.counters.faults));
  return out;
}

// The host-wide settings the scheduler runs with, as the host has them.
std::string settings(const mediator::Host& host, uint32_t slice_blocks) {
  const mediator::HostConfig& c = host.config();
  return strfmt(
      "{\"scheduler\": \"%s\", \"turn_ms\": %llu, \"max_gpu_ms\": %u, \"slice_blocks\": %u, "
      "\"ring_ahead\": %s}",
      std::string(host.scheduler_name()).c_str(), static_cast<unsigned long long>(c.turn_ns / 1'000'000), c.max_gpu_ms,
      slice_blocks, c.ring_ahead ? "true" : "false");
}

std::string json(const std::vector<VmStats>& vms, uint64_t reserved, uint64_t partitions, const std::string& host) {
  std::string out = strfmt("{\"reserved_vram_bytes\": %llu, \"partition_vram_bytes\": %llu, \"host\": %s, \"vms\": [",
                           static_cast<unsigned long long>(reserved), static_cast<unsigned long long>(partitions),
                           host.c_str());
  for (size_t i = 0; i < vms.size(); ++i) {
    const VmStats& v = vms[i];
    out += strfmt(
        "%s{\"name\": \"%s\", \"pid\": %d, \"uid\": %u, \"vm_id\": %u, \"vram_bytes\": %llu, "
        "\"channels\": %u, \"weight\": %u, \"share_1s\": %.4f, \"share_10s\": %.4f, \"gpu_ns\": %llu, "
        "\"counters\": %s}",
        i ? ", " : "", v.name.c_str(), static_cast<int>(v.peer.pid), static_cast<unsigned>(v.peer.uid), v.vm_id,
        static_cast<unsigned long long>(v.vram_bytes), v.channels, v.weight, v.share_1s, v.share_10s,
        static_cast<unsigned long long>(v.gpu_ns), v.counters.json().c_str());
  }
  return out + "]}\n";
}

}  // namespace

std::string Daemon::control(const std::string& line) {
  std::istringstream in(line);
  std::string cmd;
  in >> cmd;
  if (cmd == "list") return table(stats());
  if (cmd == "stats")
    return json(stats(), host_->reserved_used(), host_->partitions_used(), settings(*host_, config_.slice_blocks));
  if (cmd == "shares") {
    std::string out = strfmt("%llu %s\n", static_cast<unsigned long long>(clock_.now_ns()),
                             std::string(host_->scheduler_name()).c_str());
    for (const VmStats& v : stats())
      out += strfmt("%s %llu %u\n", v.name.c_str(), static_cast<unsigned long long>(v.gpu_ns), v.weight);
    return out;
  }
  if (cmd == "set-weight") {
    std::string name;
    long long w = 0;
    if (!(in >> name >> w)) return "error: usage: set-weight NAME WEIGHT\n";
    std::lock_guard lock(mutex_);
    for (auto& s : sessions_) {
      std::lock_guard sl(s->lock());
      if (!s->attached() || s->name() != name) continue;
      if (w <= 0 || w > VGPU_OPT_WEIGHT_MAX)
        return strfmt("error: weight: %lld is not in [1, %u]\n", w, VGPU_OPT_WEIGHT_MAX);
      if (Status st = host_->set_weight(s->vgpu()->id(), static_cast<uint32_t>(w)); !st)
        return "error: " + st.error().message + "\n";
      s->set_weight(static_cast<uint32_t>(w));
      log(strfmt("vm %s: weight %lld", name.c_str(), w));
      return "ok\n";
    }
    return "error: no VM named '" + name + "'\n";
  }
  return "error: unknown command '" + cmd + "' (list, stats, shares, set-weight NAME W)\n";
}

void Daemon::serve_control() {
  UniqueFd fd(accept4(control_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd) return;
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &CONTROL_TIMEOUT, sizeof CONTROL_TIMEOUT);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &CONTROL_TIMEOUT, sizeof CONTROL_TIMEOUT);
  std::string line;
  char c;
  while (line.size() < MAX_LINE && recv(fd.get(), &c, 1, 0) == 1 && c != '\n') line.push_back(c);
  const std::string answer = control(line);
  (void)send_all(fd.get(), std::as_bytes(std::span(answer.data(), answer.size())));
}

}  // namespace vgpu::vgpud
