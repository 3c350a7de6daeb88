// SPDX-License-Identifier: GPL-2.0-or-later
// The daemon backend (-device vgpu,mode=fv,socket=PATH): the vGPU lives in
// vgpud (docs/vgpud.md), this process is its client. Trapped reads are
// round trips; writes are posted where the protocol allows; the VM's VRAM
// comes as a file descriptor and the direct ranges of the daemon's
// layouts are offsets in it, so QEMU maps them as it maps the embedded
// VRAM memfd. An interrupt thread turns the daemon's eventfd and status
// page into the level callback. When the daemon goes away the device is
// lost: reads give all ones, writes go nowhere, one line is logged, and
// the process carries on.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "capi/backend.h"
#include "common/text.h"
#include "vgpud/client/client.h"

namespace vgpu::capi {
namespace {

static_assert(VGPU_OPT_VM_NAME_MAX == vgpud::proto::NAME_BYTES - 1, "vm-name's limit is the protocol's");

uint32_t region_of(VgpuBar bar) { return bar == VGPU_BAR1 ? vgpud::proto::REGION_BAR1 : vgpud::proto::REGION_BAR3; }

class DaemonBackend final : public Backend {
 public:
  // Migration through the daemon (docs/migration.md §7): the same calls
  // as the embedded backend's, each a round trip; VRAM is the daemon's
  // memfd, which QEMU migrates as RAM.
  std::string migration_refusal() const override {
    if (client_->lost())
      return "vgpu: the vgpud daemon at " + socket_ + " is gone (" + client_->lost_reason() + "): nothing to migrate";
    return {};
  }
  Status freeze(uint64_t timeout_ms) override {
    return client_->freeze(static_cast<uint32_t>(std::clamp<uint64_t>(timeout_ms, 1, vgpud::proto::MAX_FREEZE_MS)));
  }
  void thaw() override { client_->thaw(); }
  void migrated() override {
    if (Status s = client_->migrated(); !s) say(s.error().message);
  }
  Status dirty_log(bool on) override { return client_->dirty_log(on); }
  Result<uint64_t> dirty_log_take(std::span<uint64_t> bitmap) override { return client_->dirty_take(bitmap); }
  Result<std::vector<uint8_t>> save_state() override { return client_->state_export(); }
  Status load_state(std::span<const uint8_t> image) override { return client_->state_import(image); }
  DaemonBackend(std::unique_ptr<vgpud::Client> client, const BackendConfig& config, std::string vm_name)
      : client_(std::move(client)),
        socket_(config.socket),
        vm_name_(std::move(vm_name)),
        vram_bytes_(config.vgpu.vram_bytes),
        log_(config.host.log) {
    stop_ = vgpud::UniqueFd(eventfd(0, EFD_CLOEXEC));
    irq_thread_ = std::thread([this] { irq_main(); });
  }
  ~DaemonBackend() override {
    const uint64_t one = 1;
    (void)!write(stop_.get(), &one, sizeof one);
    irq_thread_.join();
  }

  const char* kind() const override { return "daemon"; }

  uint32_t bar0_read32(uint32_t offset) override { return checked(client_->read32(vgpud::proto::REGION_BAR0, offset)); }
  void bar0_write32(uint32_t offset, uint32_t value) override {
    client_->write32(vgpud::proto::REGION_BAR0, offset, value);
    checked(0);
  }
  uint32_t bar_read32(VgpuBar bar, uint64_t offset) override {
    return checked(client_->read32(region_of(bar), offset));
  }
  void bar_write32(VgpuBar bar, uint64_t offset, uint32_t value) override {
    client_->write32(region_of(bar), offset, value);
    checked(0);
  }
  uint64_t bar_size(VgpuBar bar) const override { return client_->bar_size(region_of(bar)); }
  uint64_t bar_generation() const override { return client_->layout_generation(); }

  std::vector<VgpuBarRange> bar_layout(VgpuBar bar) override {
    std::vector<VgpuBarRange> out;
    for (const auto& r : client_->layout(region_of(bar)))
      out.push_back(VgpuBarRange{r.bar_offset, r.vram_offset, r.size, r.trapped != 0});
    if (out.empty() || client_->lost()) return all_trapped(bar_size(bar));
    return out;
  }

  int vram_fd() const override { return client_->vram_fd(); }
  uint64_t vram_size() const override { return vram_bytes_; }
  void reset() override {
    client_->reset();
    checked(0);
  }

  // Guest RAM shared with the daemon as memfds is not done yet (issue 10).
  Status set_dma(VgpuDmaFn fn, void*) override {
    if (!fn) return {};
    return fail(Errc::unsupported, "system memory (DMA) through vgpud is not supported yet");
  }
  Status set_guest_ram(const std::vector<VgpuRamRange>& ranges) override {
    if (ranges.empty()) return {};
    return fail(Errc::unsupported, "guest RAM through vgpud is not supported yet");
  }

  VgpuEventCounts event_counts() const override {
    return VgpuEventCounts{.doorbells = 0, .faults = 0, .round_trips = client_->round_trips()};
  }
  std::string daemon_scheduler() const override { return std::string(client_->scheduler()); }
  std::string daemon_vm_name() const override { return vm_name_; }

  nlohmann::ordered_json counters_json() const override {
    return {{"daemon_socket", socket_},
            {"vm_id", client_->vm_id()},
            {"round_trips", client_->round_trips()},
            {"posted_writes", client_->posted()},
            {"device_lost", client_->lost()}};
  }

 private:
  // After every access: the first time the daemon is found gone, say so once.
  uint32_t checked(uint32_t value) {
    if (client_->lost() && !loss_logged_.exchange(true)) {
      const std::string line = "vgpu: the vgpud daemon at " + socket_ + " is gone (" + client_->lost_reason() +
                               "): the device is lost (reads give all ones, writes are dropped)";
      say(line);
    }
    return value;
  }
  void say(const std::string& line) const {
    if (log_)
      log_(LogKind::internal_error, line);
    else
      log_to_stderr(LogKind::internal_error, line);
  }

  // The daemon stores the line's level, counts its rising edges and the
  // interrupt messages per vector in the status page, then signals the
  // eventfd: the line follows the level (a fall and a rise between two
  // looks is still a new edge); a vector whose count moved sends one
  // message (several coalesce: a waiter needs to know that one came).
  void irq_main() {
    const vgpud::proto::IrqStatus* st = client_->irq_status();
    bool delivered = false;
    uint64_t edges = 0;
    uint64_t messages[regs::pci::MSI_VECTORS] = {};
    for (;;) {
      pollfd fds[2] = {{client_->irq_fd(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) continue;
      if (fds[1].revents) return;
      uint64_t n;
      (void)!read(client_->irq_fd(), &n, sizeof n);
      const bool level = std::atomic_ref<const uint32_t>(st->level).load(std::memory_order_acquire) != 0;
      const uint64_t now_edges = std::atomic_ref<const uint64_t>(st->edges).load(std::memory_order_acquire);
      if (delivered && level && now_edges != edges) interrupts_.line(false);
      if (level != delivered || (level && now_edges != edges)) interrupts_.line(level);
      delivered = level;
      edges = now_edges;
      for (unsigned v = 0; v < regs::pci::MSI_VECTORS; ++v) {
        const uint64_t count = std::atomic_ref<const uint64_t>(st->messages[v]).load(std::memory_order_acquire);
        if (count == messages[v]) continue;
        messages[v] = count;
        interrupts_.message(v);
      }
    }
  }

  std::unique_ptr<vgpud::Client> client_;
  const std::string socket_;
  const std::string vm_name_;
  const uint64_t vram_bytes_;
  LogFn log_;
  std::atomic<bool> loss_logged_{false};
  vgpud::UniqueFd stop_;
  std::thread irq_thread_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_daemon_backend(const BackendConfig& config) {
  // The VM's own options go to the daemon; the host's are the daemon's.
  const mediator::VgpuConfig& vm = config.vgpu;
  static_assert(VGPU_OPT_DAEMON_TIMEOUT_MS_DEFAULT == vgpud::DEFAULT_TIMEOUT_MS);
  const vgpud::AttachOptions o{
      .name = config.vm_name.empty() ? strfmt("qemu-%d", static_cast<int>(getpid())) : config.vm_name,
      .vram_bytes = vm.vram_bytes,
      .channels = vm.channels,
      .weight = vm.weight,
      .bar_remap = vm.bar_remap,
      .lazy_shadow = vm.lazy_shadow,
      .pv = vm.pv,
      .incoming = config.incoming,
      .timeout_ms = config.daemon_timeout_ms != 0 ? std::optional<uint32_t>(config.daemon_timeout_ms) : std::nullopt};
  auto c = vgpud::Client::attach(config.socket, o);
  if (!c) {
    // The client's message names the socket and says what went wrong
    // (unreachable, not vgpud, no answer in time): QEMU's realize shows it.
    if (c.error().refusal == vgpud::proto::Refusal::none) return fail(Errc::not_found, c.error().message);
    return fail(Errc::invalid_argument,
                strfmt("vgpud at %s refused VM %s (%s): %s", config.socket.c_str(), o.name.c_str(),
                       vgpud::proto::refusal_name(c.error().refusal), c.error().message.c_str()));
  }
  return std::make_unique<DaemonBackend>(std::move(*c), config, o.name);
}

}  // namespace vgpu::capi
