// SPDX-License-Identifier: GPL-2.0-or-later
// What shadowing costs, per vGPU. Updated by the VM's thread and the
// scheduler's dispatch thread, read by the mediator's API.
#pragma once

#include <atomic>
#include <cstdint>

namespace vgpu::shadow {

struct ShadowCounters {
  std::atomic<uint64_t> entries_scanned{0};  // guest PDEs/PTEs read and translated
  std::atomic<uint64_t> shadow_writes{0};    // shadow entries written (changed)
  std::atomic<uint64_t> pages_rescanned{0};  // guest table pages rescanned by lazy sync
  std::atomic<uint64_t> bad_entries{0};      // guest entries pointing outside the partition
  std::atomic<uint64_t> full_syncs{0};       // whole address spaces rescanned
  std::atomic<uint64_t> dirty_syncs{0};      // lazy syncs that had dirty pages

  void add(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
};

}  // namespace vgpu::shadow
