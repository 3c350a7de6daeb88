// SPDX-License-Identifier: GPL-2.0-or-later
#include "testbed/mediated_port.h"

#include <atomic>
#include <thread>

namespace vgpu::testbed {
namespace {
gpu::Bar to_gpu(driver::Bar bar) { return static_cast<gpu::Bar>(static_cast<uint8_t>(bar)); }
}  // namespace

Result<std::unique_ptr<MediatedPort>> MediatedPort::create(mediator::Vgpu& vgpu, gpu::Vram& vram) {
  std::unique_ptr<MediatedPort> port(new MediatedPort(vgpu));
  if (vgpu.config().bar_remap) {
    auto b1 = gpu::BarWindow::create(vram, vgpu.bar_size(gpu::Bar::bar1));
    auto b3 = gpu::BarWindow::create(vram, vgpu.bar_size(gpu::Bar::bar3));
    if (!b1) return std::unexpected(b1.error().context("mediated port"));
    if (!b3) return std::unexpected(b3.error().context("mediated port"));
    port->bar1_ = std::move(*b1);
    port->bar3_ = std::move(*b3);
  }
  vgpu.set_message_handler(port->message_handler());
  return port;
}

MediatedPort::~MediatedPort() { vgpu_.set_message_handler(nullptr); }

// An access to a page the mediator maps directly goes to memory, as it
// would in a guest whose hypervisor mapped that page: no trap.
uint32_t* MediatedPort::direct_word(driver::Bar bar, uint64_t offset, bool write) {
  gpu::BarWindow* w = window(bar);
  if (!w || offset % sizeof(uint32_t)) return nullptr;
  refresh();
  auto span = w->span(offset, sizeof(uint32_t), write);
  return span.empty() ? nullptr : reinterpret_cast<uint32_t*>(span.data());
}

uint32_t MediatedPort::read32(driver::Bar bar, uint64_t offset) {
  if (!decodes(bar, offset)) return BUS_MISS;
  if (bar == driver::Bar::bar0) return vgpu_.read32(static_cast<uint32_t>(offset));
  if (uint32_t* p = direct_word(bar, offset, false))
    return std::atomic_ref<uint32_t>(*p).load(std::memory_order_acquire);
  return vgpu_.bar_read32(to_gpu(bar), offset);
}

void MediatedPort::write32(driver::Bar bar, uint64_t offset, uint32_t value) {
  if (!decodes(bar, offset)) return;
  if (bar == driver::Bar::bar0) {
    vgpu_.write32(static_cast<uint32_t>(offset), value);
  } else if (uint32_t* p = direct_word(bar, offset, true)) {
    std::atomic_ref<uint32_t>(*p).store(value, std::memory_order_release);
  } else {
    vgpu_.bar_write32(to_gpu(bar), offset, value);
  }
}

// Page by page: a direct page's words go to memory, a trapped page's to
// the mediator in one trap for the page.
void MediatedPort::fill32(driver::Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) {
  fill32_by_page(
      bar, offset, bytes, value, mediator::BarApertures::PAGE,
      [&](uint64_t at, uint64_t n) {
        gpu::BarWindow* w = window(bar);
        if (w) refresh();
        return w ? w->span(at, n, true) : std::span<std::byte>{};
      },
      [&](uint64_t at, uint64_t n) { vgpu_.bar_fill32(to_gpu(bar), at, n, value); });
}

void MediatedPort::relax() { std::this_thread::yield(); }

uint64_t MediatedPort::bar_size(driver::Bar bar) const {
  if (bar == driver::Bar::bar0) return regs::pci::BAR0_SIZE;
  return vgpu_.bar_size(to_gpu(bar));
}

gpu::BarWindow* MediatedPort::window(driver::Bar bar) {
  if (bar == driver::Bar::bar1) return bar1_.get();
  if (bar == driver::Bar::bar3) return bar3_.get();
  return nullptr;
}

void MediatedPort::rebuild() {
  for (driver::Bar bar : {driver::Bar::bar1, driver::Bar::bar3}) {
    gpu::BarWindow* w = window(bar);
    w->clear();
    for (const mediator::DirectRange& r : vgpu_.direct_ranges(to_gpu(bar)))
      (void)w->map_page(r.bar_offset, r.vram_addr, r.bytes, r.read_only);
  }
}

void MediatedPort::refresh() {
  const uint64_t gen = vgpu_.layout_generation();
  if (gen == generation_) return;
  rebuild();
  generation_ = gen;
}

std::span<std::byte> MediatedPort::map(driver::Bar bar, uint64_t offset, uint64_t len) {
  gpu::BarWindow* w = window(bar);
  if (!w) return {};  // naive mode: every access traps
  refresh();
  return w->span(offset, len, true);
}

}  // namespace vgpu::testbed
