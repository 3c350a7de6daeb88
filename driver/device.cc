// SPDX-License-Identifier: GPL-2.0-or-later
// Device bring-up for the runtime: identity, units, interrupts, VRAM,
// instance heap, BAR3 then BAR1, PFIFO, the fence buffer.
#include <algorithm>

#include "driver/msg.h"
#include "driver/runtime.h"
#include "driver/timer.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace {
// Nothing the driver allocates starts at VRAM address 0 (a zero PDE table
// address means "no table"): the first 64 KiB stay unused.
constexpr uint64_t VRAM_GUARD = 64 * KiB;
constexpr uint64_t HEAP_GRANULE = 64 * KiB;
}  // namespace

Result<std::unique_ptr<Device>> Device::open(Port& port, const DeviceOptions& options) {
  std::unique_ptr<Device> dev(new Device(port, options));
  if (auto ok = dev->bring_up(); !ok) return std::unexpected(ok.error().context("open " + port.name()));
  return dev;
}

Status Device::bring_up() {
  auto info = init_device(port_);
  if (!info) return std::unexpected(info.error());
  info_ = *info;
  vram_ = std::make_unique<RangeAllocator>(msg("VRAM ({} bytes)", info_.vram_bytes), 0, info_.vram_bytes);
  if (auto ok = vram_->reserve(0, VRAM_GUARD); !ok) return ok;

  const uint64_t heap_bytes =
      align_down(std::min({options_.inst_heap_bytes, port_.bar_size(Bar::bar3), info_.vram_bytes / 4}), HEAP_GRANULE);
  if (heap_bytes == 0) return fail(Errc::invalid_argument, "instance heap of 0 bytes");
  auto heap = vram_->alloc(heap_bytes, fmt::BIG_PAGE);
  if (!heap) return std::unexpected(heap.error().context("instance heap"));
  heap_ = std::make_unique<RangeAllocator>("instance heap", *heap, heap_bytes);
  tables_ = std::make_unique<TableMemory>(*heap_, vram_.get());

  TablesMaker maker;
  if (options_.paravirtual) {
    auto area = heap_->alloc(regs::pv::AREA_BYTES, regs::pv::SLOT_BYTES);
    if (!area) return std::unexpected(area.error().context("PV slot area"));
    auto pv = options_.paravirtual(port_, mem_, *tables_, *area);
    if (!pv) return std::unexpected(pv.error());
    pv_ = std::move(*pv);
    maker = [this](std::string name, uint64_t size, SpaceKind kind) {
      return make_tables(std::move(name), size, kind);
    };
  }
  auto bars = Bars::init(port_, mem_, *heap_, *vram_, *tables_, maker);
  if (!bars) return std::unexpected(bars.error());
  bars_ = std::move(*bars);
  auto fifo = Fifo::init(port_, mem_, *heap_);
  if (!fifo) return std::unexpected(fifo.error());
  fifo_ = std::move(*fifo);

  auto fence = vram_->alloc(fmt::SMALL_PAGE, fmt::SMALL_PAGE);
  if (!fence) return std::unexpected(fence.error().context("fence buffer"));
  fence_mem_ = *fence;
  auto fence_bar1 = bars_->bar1().map(fence_mem_, fmt::SMALL_PAGE);
  if (!fence_bar1) return std::unexpected(fence_bar1.error().context("fence buffer"));
  fence_bar1_ = *fence_bar1;
  for (uint64_t off = 0; off < fmt::SMALL_PAGE; off += 4) port_.write32(Bar::bar1, fence_bar1_ + off, 0);
  return {};
}

Device::~Device() {
  if (bars_ && fence_bar1_) (void)bars_->bar1().unmap(fence_bar1_);
  if (fence_mem_) (void)vram_->free(fence_mem_);
  fifo_.reset();
  bars_.reset();
}

Result<std::unique_ptr<PageTables>> Device::make_tables(std::string name, uint64_t size, SpaceKind kind) {
  if (!pv_) {
    auto vmm = Vmm::create(std::move(name), mem_, *tables_, size, kind != SpaceKind::channel);
    if (!vmm) return std::unexpected(vmm.error());
    return std::unique_ptr<PageTables>(std::move(*vmm));
  }
  return pv_->make(std::move(name), size, kind);
}

uint64_t Device::time_ns() { return read_time_ns(port_); }

Result<std::unique_ptr<Context>> Device::create_context() {
  std::unique_ptr<Context> ctx(new Context(*this));
  if (auto ok = ctx->setup(); !ok) return std::unexpected(ok.error().context("create context"));
  return ctx;
}

}  // namespace vgpu::driver
