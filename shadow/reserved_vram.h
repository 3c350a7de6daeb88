// SPDX-License-Identifier: GPL-2.0-or-later
// Hypervisor-reserved VRAM: shadow page tables, shadow instance blocks,
// the physical runlist and USERD pages live here, out of every guest's
// reach. A first-fit allocator with coalescing; memory is zeroed when
// handed out. Thread-safe.
//
// Translations outlive page tables: the physical MMU caches translations
// keyed by the page directory's address, and keeps them until the TLB is
// invalidated. A pool made with a `Shootdown` (a full physical TLB
// invalidate) therefore never hands out memory that held translations
// while the TLB may still hold entries for it: what is freed goes into
// quarantine and becomes free again only after a shootdown that began
// after the free. alloc() runs one when clean memory does not suffice,
// so the quarantine costs one TLB invalidate per pool-full of churn
// (docs/mediator.md, "Reuse of shadow memory").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "common/free_ranges.h"
#include "gpu/mem/vram.h"

namespace vgpu::shadow {

class ReservedVram {
 public:
  static constexpr uint64_t GRANULE = 4096;
  // Drops every translation the physical MMU caches; returns when done.
  // Called with no lock of the pool held.
  using Shootdown = std::function<void()>;

  // Without a shootdown, freed memory is reusable at once (memory that
  // never holds translations: partitions).
  ReservedVram(gpu::Vram& vram, uint64_t base, uint64_t size, Shootdown shootdown = nullptr);

  // A zeroed block of at least `bytes`, aligned to `align` (power of two,
  // at least GRANULE); none when the region is exhausted.
  [[nodiscard]] std::optional<uint64_t> alloc(uint64_t bytes, uint64_t align = GRANULE);
  void free(uint64_t addr);

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t used() const;  // handed out, not freed
  uint64_t peak() const;
  uint64_t quarantined() const;  // freed, waiting for a shootdown
  uint64_t shootdowns() const;   // run by this pool
  bool contains(uint64_t addr) const { return addr >= base_ && addr - base_ < size_; }

 private:
  std::optional<uint64_t> take_locked(uint64_t bytes, uint64_t align);
  uint64_t read(const uint64_t& field) const;  // one of the counts below, under the lock

  gpu::Vram& vram_;
  const uint64_t base_;
  const uint64_t size_;
  const Shootdown shootdown_;
  mutable std::mutex mutex_;
  FreeRanges free_;
  std::map<uint64_t, uint64_t> used_;        // addr -> bytes
  std::map<uint64_t, uint64_t> quarantine_;  // addr -> bytes
  uint64_t used_bytes_ = 0;
  uint64_t peak_bytes_ = 0;
  uint64_t quarantined_bytes_ = 0;
  uint64_t shootdowns_ = 0;
};

}  // namespace vgpu::shadow
