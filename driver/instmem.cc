// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/instmem.h"

#include <atomic>
#include <cstring>

#include "vgpu/bits.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace {
uint32_t* word_at(std::span<std::byte> map, uint64_t off) { return reinterpret_cast<uint32_t*>(map.data() + off); }
}  // namespace

uint64_t InstMem::pramin_offset(uint64_t addr) {
  const uint64_t base = align_down(addr, regs::pramin::SIZE);
  if (base != window_) {
    port_.write32(Bar::bar0, regs::pbus::PRAMIN_WINDOW.offset,
                  regs::pbus::PraminBase::make(static_cast<uint32_t>(base >> regs::pbus::PRAMIN_BASE_SHIFT)) |
                      regs::pbus::PraminTarget::make(0));
    window_ = base;
    ++stats_.window_moves;
  }
  ++stats_.pramin_accesses;
  return regs::pramin::BASE + (addr - base);
}

uint32_t InstMem::read32(uint64_t addr) {
  if (in_bar3(addr, 4)) {
    ++stats_.bar3_accesses;
    const uint64_t off = addr - bar3_base_;
    if (!bar3_map_.empty()) return std::atomic_ref<uint32_t>(*word_at(bar3_map_, off)).load(std::memory_order_acquire);
    return port_.read32(Bar::bar3, off);
  }
  return port_.read32(Bar::bar0, pramin_offset(addr));
}

void InstMem::write32(uint64_t addr, uint32_t value) {
  if (in_bar3(addr, 4)) {
    ++stats_.bar3_accesses;
    const uint64_t off = addr - bar3_base_;
    if (!bar3_map_.empty()) {
      std::atomic_ref<uint32_t>(*word_at(bar3_map_, off)).store(value, std::memory_order_release);
      return;
    }
    port_.write32(Bar::bar3, off, value);
    return;
  }
  port_.write32(Bar::bar0, pramin_offset(addr), value);
}

uint64_t InstMem::read64(uint64_t addr) {
  const uint32_t lo = read32(addr);
  return join64(read32(addr + 4), lo);
}

void InstMem::write64(uint64_t addr, uint64_t value) {
  write32(addr, lo32(value));
  write32(addr + 4, hi32(value));
}

void InstMem::fill(uint64_t addr, uint64_t bytes, uint32_t value) {
  if (value == 0 && !bar3_map_.empty() && in_bar3(addr, bytes)) {
    stats_.bar3_accesses += bytes / 4;
    std::memset(bar3_map_.data() + (addr - bar3_base_), 0, bytes);
    std::atomic_thread_fence(std::memory_order_release);
    return;
  }
  if (in_bar3(addr, bytes) && bar3_map_.empty()) {
    stats_.bar3_accesses += bytes / 4;
    port_.fill32(Bar::bar3, addr - bar3_base_, bytes, value);
    return;
  }
  for (uint64_t off = 0; off < bytes; off += 4) write32(addr + off, value);
}

void InstMem::use_bar3(uint64_t heap_base, uint64_t bytes) {
  bar3_base_ = heap_base;
  bar3_bytes_ = bytes;
  bar3_map_ = port_.map(Bar::bar3, 0, bytes);
  if (bar3_map_.size() < bytes) bar3_map_ = {};
}

}  // namespace vgpu::driver
