// SPDX-License-Identifier: GPL-2.0-or-later
// The guest driver's Port over a vgpud Client: the unchanged driver runs
// against a vGPU of the daemon, as it does inside a QEMU guest. Direct
// BAR1/BAR3 pages (the daemon's layout) are mapped from the VM's VRAM fd,
// as QEMU maps them, and accessed without a message; everything else is a
// read round trip or a posted write.
#pragma once

#include <memory>

#include "driver/port.h"
#include "vgpud/client/client.h"

namespace vgpu::vgpud {

class ClientPort final : public driver::Port {
 public:
  static Result<std::unique_ptr<ClientPort>> create(Client& client);
  ~ClientPort() override;

  uint32_t read32(driver::Bar bar, uint64_t offset) override;
  void write32(driver::Bar bar, uint64_t offset, uint32_t value) override;
  std::span<std::byte> map(driver::Bar bar, uint64_t offset, uint64_t len) override;
  uint64_t bar_size(driver::Bar bar) const override;
  void relax() override;
  // The vGPU's interrupt messages, counted per vector by the daemon in the
  // status page; a wait sleeps on the interrupt eventfd.
  bool has_interrupts() const override { return true; }
  IrqCounts interrupt_counts() override;
  [[nodiscard]] bool wait_interrupt(const IrqCounts& seen, uint64_t timeout_ns) override;
  std::string name() const override { return "vgpud"; }

  Client& client() { return client_; }

 private:
  struct Window {
    std::byte* base = nullptr;
    uint64_t size = 0;
    std::vector<bool> mapped;  // per 4 KiB page
  };
  explicit ClientPort(Client& c) : client_(c) {}
  void refresh();  // remap the windows when the layout generation moved
  void remap(Window& w, uint32_t region);
  Window* window(driver::Bar bar);
  uint32_t* direct_word(driver::Bar bar, uint64_t offset);

  Client& client_;
  Window bar1_, bar3_;
  uint64_t generation_ = ~uint64_t{0};
};

}  // namespace vgpu::vgpud
