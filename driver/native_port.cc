// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/native_port.h"

#include <atomic>
#include <thread>

#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace {
constexpr uint64_t PAGE = fmt::SMALL_PAGE;
constexpr uint64_t NONE = ~uint64_t{0};
gpu::Bar to_gpu(Bar b) { return static_cast<gpu::Bar>(static_cast<uint8_t>(b)); }
}  // namespace

Result<std::unique_ptr<NativePort>> NativePort::create(gpu::Gpu& gpu, bool direct_maps) {
  std::unique_ptr<NativePort> p(new NativePort(gpu, direct_maps));
  for (auto [bar, w] : {std::pair{Bar::bar1, &p->bar1_}, std::pair{Bar::bar3, &p->bar3_}}) {
    auto win = gpu::BarWindow::create(gpu.vram(), gpu.bar_size(to_gpu(bar)));
    if (!win) return std::unexpected(win.error().context("native port"));
    w->win = std::move(*win);
    w->page_vram.assign(gpu.bar_size(to_gpu(bar)) / PAGE, NONE);
  }
  p->generation_ = gpu.bar_generation();
  gpu.set_message_handler(p->message_handler());
  return p;
}

NativePort::~NativePort() { gpu_.set_message_handler(nullptr); }

// A CPU access to a BAR page is a plain memory access when the page can be
// mapped directly (as on hardware, where BAR1/BAR3 reads need no driver
// help); USERD pages are never mapped, so doorbells still reach the model.
uint32_t* NativePort::direct_word(Bar bar, uint64_t offset, bool write) {
  if (offset % sizeof(uint32_t) != 0 || map(bar, offset, sizeof(uint32_t)).empty()) return nullptr;
  auto span = window(bar)->win->span(offset, sizeof(uint32_t), write);
  return span.empty() ? nullptr : reinterpret_cast<uint32_t*>(span.data());
}

uint32_t NativePort::read32(Bar bar, uint64_t offset) {
  if (!decodes(bar, offset)) return BUS_MISS;
  if (bar == Bar::bar0) return gpu_.read32(static_cast<uint32_t>(offset));
  if (uint32_t* p = direct_word(bar, offset, false))
    return std::atomic_ref<uint32_t>(*p).load(std::memory_order_acquire);
  return gpu_.bar_read32(to_gpu(bar), offset);
}

void NativePort::write32(Bar bar, uint64_t offset, uint32_t value) {
  if (!decodes(bar, offset)) return;
  if (bar == Bar::bar0) {
    // Only this driver writes the model's registers: USERD_BASE changes
    // only through it (directly, or by a PFIFO reset).
    if (offset == regs::pfifo::USERD_BASE.offset || offset == regs::pmc::ENABLE.offset) userd_base_.reset();
    return gpu_.write32(static_cast<uint32_t>(offset), value);
  }
  if (uint32_t* p = direct_word(bar, offset, true))
    return std::atomic_ref<uint32_t>(*p).store(value, std::memory_order_release);
  gpu_.bar_write32(to_gpu(bar), offset, value);
}

// Page by page: a page map() gives is written there (one map() a page,
// not one a word), any other word (USERD, unmapped) as write32 does.
void NativePort::fill32(Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) {
  fill32_by_page(
      bar, offset, bytes, value, PAGE,
      [&](uint64_t at, uint64_t n) {
        return map(bar, at, n).empty() ? std::span<std::byte>{} : window(bar)->win->span(at, n, true);
      },
      [&](uint64_t at, uint64_t n) {
        for (uint64_t w = 0; w < n; w += sizeof(uint32_t)) gpu_.bar_write32(to_gpu(bar), at + w, value);
      });
}

uint64_t NativePort::bar_size(Bar bar) const {
  return bar == Bar::bar0 ? regs::pci::BAR0_SIZE : gpu_.bar_size(to_gpu(bar));
}

void NativePort::relax() { std::this_thread::yield(); }

NativePort::Window* NativePort::window(Bar bar) {
  if (bar == Bar::bar1) return &bar1_;
  if (bar == Bar::bar3) return &bar3_;
  return nullptr;
}

bool NativePort::is_userd(Bar bar, uint64_t page) {
  if (bar != Bar::bar1) return false;
  if (!userd_base_) userd_base_ = gpu_.read32(regs::pfifo::USERD_BASE.offset);
  const uint32_t base = *userd_base_;
  if (!regs::pfifo::UserdBaseEnable::get(base)) return false;
  const uint64_t start = uint64_t{regs::pfifo::UserdBaseAddr::get(base)} << regs::pfifo::USERD_BASE_SHIFT;
  return page >= start && page < start + uint64_t{regs::NUM_CHANNELS} * regs::userd::SIZE;
}

// The BAR's translation may have changed: remap pages whose target moved,
// unmap pages that lost theirs. Unchanged pages (and spans over them) stay.
void NativePort::revalidate(Bar bar, Window& w) {
  for (uint64_t i = 0; i < w.page_vram.size(); ++i) {
    if (w.page_vram[i] == NONE) continue;
    const uint64_t off = i * PAGE;
    auto t = gpu_.bar_translate(to_gpu(bar), off);
    const uint64_t now = t ? t->vram_addr + (off - t->bar_offset) : NONE;
    if (now == w.page_vram[i]) continue;
    if (now == NONE || !w.win->map_page(off, now, PAGE, t->read_only)) {
      (void)w.win->unmap_page(off, PAGE);
      w.page_vram[i] = NONE;
    } else {
      w.page_vram[i] = now;
    }
  }
}

std::span<std::byte> NativePort::map(Bar bar, uint64_t offset, uint64_t len) {
  Window* w = window(bar);
  if (!direct_ || !w || len == 0 || offset > w->win->size() || len > w->win->size() - offset) return {};
  if (const uint64_t gen = gpu_.bar_generation(); gen != generation_) {
    generation_ = gen;
    revalidate(Bar::bar1, bar1_);
    revalidate(Bar::bar3, bar3_);
  }
  for (uint64_t page = align_down(offset, PAGE); page < offset + len; page += PAGE) {
    uint64_t& slot = w->page_vram[page / PAGE];
    if (slot != NONE) continue;
    if (is_userd(bar, page)) return {};
    auto t = gpu_.bar_translate(to_gpu(bar), page);
    if (!t) return {};
    const uint64_t vram = t->vram_addr + (page - t->bar_offset);
    if (!w->win->map_page(page, vram, PAGE, t->read_only)) return {};
    slot = vram;
  }
  return w->win->span(offset, len);
}

}  // namespace vgpu::driver
