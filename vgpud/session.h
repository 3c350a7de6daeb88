// SPDX-License-Identifier: GPL-2.0-or-later
// One client connection of the daemon (one QEMU, one VM) on its own
// thread: the ATTACH that creates its vGPU, then its trapped accesses, in
// order, until it closes, breaks the protocol or the daemon stops. A bad
// message closes this connection only (with a log line); the vGPU goes
// with it (mediator::Host::destroy_vgpu waits for its engine work and
// frees its partition, channels and shadows).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "mediator/host.h"
#include "vgpud/protocol.h"
#include "vgpud/share_history.h"
#include "vgpud/wire.h"

namespace vgpu::vgpud {

// What the daemon decides for a session: admission (the VM limit and
// unique names) and where log lines go.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual mediator::Host& host() = 0;
  // Kernel slicing of every VM (--slice-blocks).
  virtual uint32_t slice_blocks() const = 0;
  // Every VM's operation watchdog (VGPU_OPT_WATCHDOG_MS).
  virtual uint32_t watchdog_ms() const { return VGPU_OPT_WATCHDOG_MS_DEFAULT; }
  // Reserve a slot for `name`; a refusal says why. An incoming VM (a
  // migration's destination, proto::OPT_INCOMING) may share the name of one
  // attached VM that is not itself incoming: its source.
  virtual std::expected<void, std::pair<proto::Refusal, std::string>> admit(const std::string& name, bool incoming) = 0;
  virtual void release(const std::string& name) = 0;
  virtual void log(const std::string& line) = 0;
  virtual void session_ended() = 0;  // wakes the daemon to reap the thread
};

// Where a vGPU's interrupt line goes: the eventfd and the status page
// passed to the client. Shared with the interrupt handler, which the
// mediator may still be running (on an engine thread) after the session
// replaced it: the last one out closes them.
struct IrqSink {
  UniqueFd eventfd, status_fd;
  proto::IrqStatus* status = nullptr;
  void deliver(bool level);
  void message(regs::pci::MsiVector vector);
  ~IrqSink();
};

// Where a VM stands in a migration (docs/migration.md §7), as vgpuctl
// shows it: a source goes outgoing (dirty log on) -> frozen -> exported,
// then its QEMU quits or, told MIGRATED, its vGPU is freed (migrated: no
// longer listed); a destination goes frozen -> imported -> running at its
// thaw (its resume). A thaw (a cancelled or failed move) is running again.
enum class MigrationState : uint8_t { running, outgoing, frozen, exported, imported, migrated };
const char* migration_state_name(MigrationState s);

// What the control socket shows of one VM.
struct VmStats {
  std::string name;
  PeerCred peer;
  uint32_t vm_id = 0;
  uint64_t vram_bytes = 0;          // its VRAM (the partition the guest sees)
  uint64_t vram_touched_bytes = 0;  // of it, pages the VM has written since attaching (resident in its memfd)
  uint64_t shadow_bytes = 0;        // reserved VRAM set aside for its shadows (the daemon's, not the guest's)
  uint64_t shadow_used_bytes = 0;   // of that, in use
  uint32_t channels = 0;
  uint32_t weight = 0;
  uint64_t gpu_ns = 0;
  double share_1s = 0, share_10s = 0;              // of the GPU time all VMs used (share_history.h)
  double utilization_1s = 0, utilization_10s = 0;  // GPU time over wall time
  mediator::CounterSnapshot counters{};
  MigrationState state = MigrationState::running;
};

class Session {
 public:
  Session(SessionHost& daemon, UniqueFd fd, PeerCred peer);
  ~Session();  // joins the thread
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start();
  void stop();  // shuts the socket down; the thread ends and tears down
  bool done() const { return done_.load(std::memory_order_acquire); }

  // With the daemon's stats lock held by the caller (the vGPU stays while
  // attached() is true under it).
  bool attached() const { return vgpu_ != nullptr; }
  const std::string& name() const { return name_; }
  // Attached as a migration's destination and not yet resumed.
  bool incoming() const { return incoming_; }
  mediator::Vgpu* vgpu() const { return vgpu_; }
  void set_weight(uint32_t w) { weight_ = w; }
  VmStats stats(mediator::Host& host, const ShareHistory& history) const;
  std::mutex& lock() { return mutex_; }

 private:
  void main();
  // Handles one message; false: close the connection (reason in `why`).
  bool handle(const Message& m, std::string& why);
  bool attach(const Message& m, std::string& why);
  bool access(const Message& m, bool write, std::string& why);
  bool reset(const Message& m, std::string& why);
  // The migration commands (session_migration.cc, docs/migration.md §7).
  bool migration(const Message& m, std::string& why);
  bool dirty_take(uint16_t id, std::string& why);
  bool state_export(uint16_t id, std::string& why);
  bool state_import(const Message& m, uint64_t bytes, std::string& why);
  // MIGRATED: the source's vGPU is freed; then what its QEMU may still send.
  bool migrated(uint16_t id, std::string& why);
  bool after_migration(const Message& m, std::string& why);
  void release_vgpu();  // destroys the vGPU and gives its name back
  bool refuse(uint16_t id, proto::Command cmd, proto::Refusal r, const std::string& reason, std::string& why);
  bool send(std::span<const std::byte> bytes, std::string& why, std::span<const int> fds = {});
  bool send_layout_if_changed(std::string& why);
  void teardown();

  SessionHost& daemon_;
  UniqueFd fd_;
  const PeerCred peer_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::optional<uint16_t> last_id_;
  std::chrono::steady_clock::time_point attached_at_;

  // Attached state; written by the session thread under mutex_, read by
  // the daemon under it.
  mutable std::mutex mutex_;
  std::string name_;
  mediator::Vgpu* vgpu_ = nullptr;
  uint32_t weight_ = 0;
  uint64_t sent_generation_ = ~uint64_t{0};
  uint64_t bar_sizes_[proto::NUM_REGIONS] = {};
  std::shared_ptr<IrqSink> irq_;
  bool logging_ = false;  // this session's start of the VRAM's dirty log (session thread only)
  MigrationState state_ = MigrationState::running;  // written by the session thread under mutex_
  bool incoming_ = false;                           // OPT_INCOMING, until the thaw after an import (under mutex_)
  bool migrated_ = false;                           // MIGRATED freed the vGPU (session thread only)
  void set_state(MigrationState s);
};

}  // namespace vgpu::vgpud
