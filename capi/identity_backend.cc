// SPDX-License-Identifier: GPL-2.0-or-later
// The identity backend: what the device can honestly do while the software
// GPU model is not linked. BAR0 answers PMC BOOT_0 (so a guest can identify
// the chipset) and regs::BAD_REGISTER everywhere else; writes are dropped;
// BAR1/BAR3 read all ones. There is no VRAM, so nothing is remapped.
#include <limits>

#include "capi/backend.h"
#include "vgpu/regs.h"

namespace vgpu::capi {
namespace {

class IdentityBackend final : public Backend {
 public:
  explicit IdentityBackend(const BackendConfig& config) : vram_bytes_(config.vram_bytes) {}

  const char* kind() const override { return "identity"; }

  uint32_t bar0_read32(uint32_t offset) override {
    return offset == regs::pmc::BOOT_0.offset ? regs::pmc::BOOT_0_VALUE : regs::BAD_REGISTER;
  }
  void bar0_write32(uint32_t, uint32_t) override {}
  uint32_t bar_read32(VgpuBar, uint64_t) override { return std::numeric_limits<uint32_t>::max(); }
  void bar_write32(VgpuBar, uint64_t, uint32_t) override {}
  uint64_t bar_size(VgpuBar bar) const override {
    return bar == VGPU_BAR1 ? regs::pci::BAR1_SIZE : regs::pci::BAR3_SIZE;
  }

  uint64_t bar_generation() const override { return 0; }
  std::vector<VgpuBarRange> bar_layout(VgpuBar bar) override { return all_trapped(bar_size(bar)); }

  int vram_fd() const override { return -1; }
  uint64_t vram_size() const override { return vram_bytes_; }

  void set_irq_handler(IrqFn, void*) override {}  // never interrupts
  std::string counters_json() const override { return {}; }

 private:
  uint64_t vram_bytes_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_backend(const BackendConfig& config) {
  return std::make_unique<IdentityBackend>(config);
}

}  // namespace vgpu::capi
