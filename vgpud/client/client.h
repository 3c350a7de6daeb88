// SPDX-License-Identifier: GPL-2.0-or-later
// A vgpud client in C++: what QEMU's hw/vgpu does through the C API, for
// tests and vgpud-bench. Connects, attaches a VM, then reads (a round
// trip each) and writes (posted where the protocol allows); applies the daemon's LAYOUT messages as
// they arrive; holds the VM's VRAM fd and interrupt eventfd. After the
// daemon is gone every read gives all ones and writes go nowhere.
// Not thread-safe: one client, one thread (as one vCPU under the BQL).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/options.h"
#include "common/error.h"
#include "vgpu/bits.h"
#include "vgpud/protocol.h"
#include "vgpud/wire.h"

namespace vgpu::vgpud {

struct AttachOptions {
  std::string name = "vm";
  uint64_t vram_bytes = 64 * MiB;
  uint32_t channels = VGPU_OPT_CHANNELS_DEFAULT;
  uint32_t weight = VGPU_OPT_WEIGHT_DEFAULT;
  bool bar_remap = VGPU_OPT_BAR_REMAP_DEFAULT != 0;
  bool lazy_shadow = VGPU_OPT_LAZY_SHADOW_DEFAULT != 0;
  bool pv = VGPU_OPT_PV_DEFAULT != 0;  // offer the paravirtual interface (spec §17)
  // A migration's destination (proto::OPT_INCOMING): it may share the name
  // of the VM it comes from when both are on one daemon.
  bool incoming = false;
  // How long to wait for the daemon's first answer; none: VGPUD_TIMEOUT
  // or DEFAULT_TIMEOUT_MS (wire.h). Later round trips wait as long as the
  // daemon takes.
  std::optional<uint32_t> timeout_ms;
};

// Refused attaches carry the daemon's reason and its Refusal. With none,
// the message is the whole story, naming the socket: it cannot be
// reached, "PATH does not speak the vgpud protocol", "vgpud at PATH did
// not answer in N s", or another protocol version.
struct AttachError {
  proto::Refusal refusal = proto::Refusal::none;  // none: no answer from a vgpud (see above)
  std::string message;
};

class Client {
 public:
  static std::expected<std::unique_ptr<Client>, AttachError> attach(const std::string& socket, const AttachOptions& o);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  uint32_t read32(uint32_t region, uint64_t offset);
  // Posted, or answered where it may change the layout (proto::write_is_posted).
  void write32(uint32_t region, uint64_t offset, uint32_t value);
  void reset();

  // Migration (docs/migration.md §7; client_migration.cc). A refusal's
  // error names the daemon's Refusal and its reason; after the daemon is
  // gone each fails with the loss.
  [[nodiscard]] Status freeze(uint32_t timeout_ms);
  // A refused thaw (the vGPU was freed by MIGRATED) loses the device, with
  // the daemon's reason.
  void thaw();
  [[nodiscard]] Status dirty_log(bool on);
  // The daemon's marks since the last take OR-ed into bitmap (bit i = VM
  // VRAM page i; at least the reply's words); the pages marked.
  [[nodiscard]] Result<uint64_t> dirty_take(std::span<uint64_t> bitmap);
  [[nodiscard]] Result<std::vector<uint8_t>> state_export();
  [[nodiscard]] Status state_import(std::span<const uint8_t> image);
  // The source's migration completed: the daemon frees the vGPU (MIGRATED).
  [[nodiscard]] Status migrated();

  // Reads and applies what the daemon sent without being asked (layouts),
  // without waiting.
  void poll();

  uint64_t bar_size(uint32_t region) const;
  // The current layout of BAR1 or BAR3, and its generation.
  const std::vector<proto::LayoutRange>& layout(uint32_t region) const;
  uint64_t layout_generation() const { return generation_; }

  int vram_fd() const { return vram_fd_.get(); }
  int irq_fd() const { return irq_fd_.get(); }
  const proto::IrqStatus* irq_status() const { return status_; }
  uint32_t vm_id() const { return reply_.vm_id; }
  // The daemon's scheduler ("" when the daemon did not say).
  std::string_view scheduler() const { return proto::scheduler_of(reply_.scheduler); }
  bool lost() const { return lost_; }
  const std::string& lost_reason() const { return lost_reason_; }  // what ended the connection
  int socket_fd() const { return fd_.get(); }

  // Round trips (messages that waited for a reply) and posted messages.
  uint64_t round_trips() const { return round_trips_; }
  uint64_t posted() const { return posted_; }

 private:
  Client() = default;
  bool send(const std::vector<std::byte>& m, std::span<const int> fds = {});
  // Reads messages until the reply to `id` (applying layouts on the way).
  std::optional<Message> wait_reply(uint16_t id);
  void apply_layout(const Message& m);
  void lose(const std::string& why);
  // Sends a migration command and waits for its reply: the reply, or the
  // error (a refusal with its reason, or the connection lost).
  Result<Message> call(proto::Command c, std::span<const std::byte> payload, std::span<const int> fds = {});

  UniqueFd fd_, vram_fd_, irq_fd_, status_fd_;
  proto::IrqStatus* status_ = nullptr;
  proto::AttachReply reply_{};
  uint16_t next_id_ = 0;
  std::vector<proto::LayoutRange> bar1_, bar3_;
  uint64_t generation_ = 0;
  bool lost_ = false;
  std::string lost_reason_;
  uint64_t round_trips_ = 0, posted_ = 0;
};

}  // namespace vgpu::vgpud
