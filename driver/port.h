// SPDX-License-Identifier: GPL-2.0-or-later
// How the guest driver touches the device: 32-bit register accesses per BAR
// and direct mappings of BAR ranges where the platform gives them. Ports:
// the in-process port onto the software GPU model (the native baseline),
// the mediated port of the testbed (a VM's view through the mediator), and
// the PCI port (libpciaccess, inside a Linux guest).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/irq_counter.h"

namespace vgpu::driver {

enum class Bar : uint8_t { bar0 = 0, bar1 = 1, bar3 = 3 };

inline constexpr uint64_t REGISTER_WAIT_NS = 2'000'000'000;  // nouveau's 2 s register waits

// Pinned memory (docs/runtime.md, "Pinned host memory"): host pages that
// stay put, so the device may reach them by DMA through sysmem PTEs.
struct PinnedPages {
  std::span<std::byte> host;  // the CPU's view, 4 KiB aligned, whole pages
  std::vector<uint64_t> bus;  // bus (guest-physical) address of each 4 KiB page
};

class Port {
 public:
  virtual ~Port() = default;
  virtual uint32_t read32(Bar bar, uint64_t offset) = 0;
  virtual void write32(Bar bar, uint64_t offset, uint32_t value) = 0;
  // A CPU mapping of [offset, offset + len) of a BAR when the platform gives
  // one (every page in the range must be mapped); an empty span otherwise,
  // and the driver falls back to read32/write32 or the copy engine.
  virtual std::span<std::byte> map(Bar bar, uint64_t offset, uint64_t len) = 0;
  virtual uint64_t bar_size(Bar bar) const = 0;
  // `bytes` (whole words) of write32(bar, ..., value) from `offset` on:
  // the same accesses, which a port may hand on at once (one trap for a
  // new page table's clearing instead of one per word).
  virtual void fill32(Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) {
    for (uint64_t off = 0; off + sizeof(uint32_t) <= bytes; off += sizeof(uint32_t)) write32(bar, offset + off, value);
  }
  // Called in every poll loop: lets the platform make progress.
  virtual void relax() {}
  // How long the driver's register waits (a runlist commit, a preempt, a
  // BAR or TLB flush) last before they fail: nouveau's 2 s. A harness
  // whose guest may break its own device shortens it (mediator/fuzz).
  virtual uint64_t register_wait_ns() const { return REGISTER_WAIT_NS; }

  // The device's interrupt messages, counted per vector (spec §11.6: a
  // non-stall interrupt, a channel error). A waiter reads
  // interrupt_counts(), checks memory, then calls wait_interrupt(seen,
  // ...), which returns true as soon as a count differs from `seen` (at
  // once if a message came in between), false after timeout_ns. A port
  // without interrupts says so, and the driver polls.
  virtual bool has_interrupts() const { return false; }
  virtual IrqCounts interrupt_counts() { return {}; }
  [[nodiscard]] virtual bool wait_interrupt(const IrqCounts& /*seen*/, uint64_t /*timeout_ns*/) { return false; }
  virtual std::string name() const = 0;

  // Pins `bytes` (rounded up to 4 KiB pages) of host memory and says where
  // each page lies on the bus. out_of_memory when the platform cannot give
  // that much; unsupported on ports without DMA.
  [[nodiscard]] virtual Result<PinnedPages> pin(uint64_t /*bytes*/) {
    return fail(Errc::unsupported, name() + ": this port has no pinned memory (no DMA)");
  }
  // Gives back what pin() gave (by its host span).
  virtual void unpin(std::span<std::byte> /*host*/) {}

  // Whether a 32-bit access at `offset` lies inside the BAR. One that does
  // not never reaches the device, as on a bus (and in QEMU's memory map):
  // a read gives BUS_MISS and a write goes nowhere. Ports that reach the
  // device in-process check it first.
  bool decodes(Bar bar, uint64_t offset) const {
    const uint64_t size = bar_size(bar);
    return size >= sizeof(uint32_t) && offset <= size - sizeof(uint32_t);
  }
  static constexpr uint32_t BUS_MISS = 0xffffffff;

 protected:
  // fill32 for a port that reaches some pages itself, in pages of `page`
  // bytes: direct(at, n) gives a page's memory where the port writes it in
  // place (an empty span where it does not), trapped(at, n) hands the
  // page's words on at once. BAR0, a misaligned start and a range the BAR
  // does not decode go word by word, as Port::fill32.
  template <typename Direct, typename Trapped>
  void fill32_by_page(Bar bar, uint64_t offset, uint64_t bytes, uint32_t value, uint64_t page, Direct direct,
                      Trapped trapped) {
    bytes -= bytes % sizeof(uint32_t);
    if (bar == Bar::bar0 || offset % sizeof(uint32_t) || !decodes(bar, offset) || bytes > bar_size(bar) - offset)
      return Port::fill32(bar, offset, bytes, value);
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t at = offset + done;
      const uint64_t n = std::min(bytes - done, page - at % page);
      if (std::span<std::byte> span = direct(at, n); !span.empty()) {
        auto* words = reinterpret_cast<uint32_t*>(span.data());
        for (uint64_t i = 0; i < n / sizeof(uint32_t); ++i)
          std::atomic_ref<uint32_t>(words[i]).store(value, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
      } else {
        trapped(at, n);
      }
      done += n;
    }
  }
};

}  // namespace vgpu::driver
