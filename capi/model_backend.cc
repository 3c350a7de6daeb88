// SPDX-License-Identifier: GPL-2.0-or-later
// The model backend: the software GPU model (gpu/gpu.h) behind the C API.
// mode=passthrough gives the VM the whole model; mode=fv puts the
// mediator in between (mediator_backend.cc).
//
// BAR layout for remapping: a page is direct when the BAR's page tables map
// it writable to VRAM and it holds no USERD page (the GP_PUT doorbell must
// trap). Everything else traps: unmapped pages (the model records the
// fault), read-only pages, and the USERD array named by PFIFO USERD_BASE.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "capi/backend.h"
#include "common/text.h"
#include "gpu/device/backend.h"
#include "capi/dma_memory.h"
#include "gpu/gpu.h"
#include "vgpu/regs.h"

namespace vgpu::capi {
namespace {

constexpr uint64_t SMALL_PAGE = 4 * KiB;

gpu::Bar to_gpu(VgpuBar bar) { return bar == VGPU_BAR1 ? gpu::Bar::bar1 : gpu::Bar::bar3; }

// Appends [offset, offset+size) to the layout, merging with the last range
// when both trap or both map contiguous VRAM.
void append(std::vector<VgpuBarRange>& out, VgpuBarRange r) {
  if (!out.empty()) {
    VgpuBarRange& last = out.back();
    bool joins = last.trapped == r.trapped && (r.trapped || last.vram_offset + last.size == r.vram_offset);
    if (joins && last.bar_offset + last.size == r.bar_offset) {
      last.size += r.size;
      return;
    }
  }
  out.push_back(r);
}

class ModelBackend final : public Backend {
 public:
  std::string migration_refusal() const override {
    return "vgpu: migration needs mode=fv (passthrough exposes the whole model, whose global state has no export)";
  }
  ModelBackend(std::unique_ptr<gpu::Gpu> g, const BackendConfig& config)
      : gpu_(std::move(g)), bar_remap_(config.vgpu.bar_remap) {
    gpu_->set_interrupt_handler([this](bool asserted) { interrupts_.line(asserted); });
    gpu_->set_message_handler([this](regs::pci::MsiVector v) { interrupts_.message(static_cast<unsigned>(v)); });
  }
  ~ModelBackend() override {
    gpu_->set_interrupt_handler(nullptr);
    gpu_->set_message_handler(nullptr);
  }

  const char* kind() const override { return "model"; }
  void reset() override { bar0_write32(regs::pmc::ENABLE.offset, 0); }

  uint32_t bar0_read32(uint32_t offset) override { return gpu_->read32(offset); }
  void bar0_write32(uint32_t offset, uint32_t value) override {
    gpu_->write32(offset, value);
    // USERD pages must trap: a new USERD base changes the BAR1 layout.
    if (offset == regs::pfifo::USERD_BASE.offset) userd_epoch_.fetch_add(1);
  }
  uint32_t bar_read32(VgpuBar bar, uint64_t offset) override { return gpu_->bar_read32(to_gpu(bar), offset); }
  void bar_write32(VgpuBar bar, uint64_t offset, uint32_t value) override {
    gpu_->bar_write32(to_gpu(bar), offset, value);
  }
  uint64_t bar_size(VgpuBar bar) const override { return gpu_->bar_size(to_gpu(bar)); }

  uint64_t bar_generation() const override { return gpu_->bar_generation() + userd_epoch_.load(); }

  std::vector<VgpuBarRange> bar_layout(VgpuBar bar) override {
    uint64_t size = bar_size(bar);
    if (!bar_remap_) return all_trapped(size);
    auto [userd_lo, userd_hi] = userd_window(bar);
    std::vector<VgpuBarRange> out;
    uint64_t offset = 0;
    while (offset < size) {
      std::optional<gpu::BarPage> page = gpu_->bar_translate(to_gpu(bar), offset);
      uint64_t end = page ? page->bar_offset + page->bytes : offset + SMALL_PAGE;
      // Split at the USERD window so that exactly its pages trap.
      if (offset < userd_lo && end > userd_lo) end = userd_lo;
      if (offset < userd_hi && end > userd_hi) end = userd_hi;
      end = std::min(end, size);
      bool in_userd = offset >= userd_lo && offset < userd_hi;
      VgpuBarRange r{offset, 0, end - offset, true};
      if (page && !page->read_only && !in_userd) {
        uint64_t vram = page->vram_addr + (offset - page->bar_offset);
        if (gpu_->vram().contains(vram, r.size)) {
          r.vram_offset = vram;
          r.trapped = false;
        }
      }
      append(out, r);
      offset = end;
    }
    return out;
  }

  int vram_fd() const override { return gpu_->vram().fd(); }
  uint64_t vram_size() const override { return gpu_->vram().size(); }

  nlohmann::ordered_json counters_json() const override { return nlohmann::ordered_json::object(); }

  // passthrough: the VM owns the device; it reaches what the front end's
  // DMA reaches (QEMU's memory map and vIOMMU decide).
  Status set_dma(VgpuDmaFn fn, void* opaque) override {
    gpu_->set_system_memory(fn ? std::make_shared<DmaMemory>(fn, opaque) : nullptr);
    return {};
  }
  Status set_guest_ram(const std::vector<VgpuRamRange>&) override { return {}; }

 private:
  // [lo, hi) of BAR1 holding the USERD array; empty for BAR3 or when unset.
  std::pair<uint64_t, uint64_t> userd_window(VgpuBar bar) {
    if (bar != VGPU_BAR1) return {0, 0};
    uint32_t v = gpu_->read32(regs::pfifo::USERD_BASE.offset);
    if (!regs::pfifo::UserdBaseEnable::get(v)) return {0, 0};
    uint64_t lo = uint64_t{regs::pfifo::UserdBaseAddr::get(v)} << regs::pfifo::USERD_BASE_SHIFT;
    return {lo, lo + uint64_t{regs::NUM_CHANNELS} * regs::userd::SIZE};
  }

  std::unique_ptr<gpu::Gpu> gpu_;
  bool bar_remap_;
  std::atomic<uint64_t> userd_epoch_{0};
};

}  // namespace

Result<std::unique_ptr<Backend>> make_backend(const BackendConfig& config) {
  if (!config.socket.empty()) return make_daemon_backend(config);
  if (config.mode == VGPU_MODE_FV) return make_mediator_backend(config);
  auto g = gpu::Gpu::create(gpu::GpuConfig{.vram_bytes = config.vgpu.vram_bytes,
                                           .clock = ClockKind::real,
                                           .log = config.host.log,
                                           .backend = config.host.engine_backend});
  if (!g)
    return std::unexpected(g.error().context(
        strfmt("software GPU model (%s=%s)", VGPU_OPT_BACKEND, gpu::engine_backend_name(config.host.engine_backend))));
  return std::make_unique<ModelBackend>(std::move(*g), config);
}

}  // namespace vgpu::capi
