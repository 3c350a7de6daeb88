// SPDX-License-Identifier: GPL-2.0-or-later
// Which 4 KiB pages of VRAM the host wrote while logging is on, for live
// migration's pre-copy (docs/migration.md §5): every host-side writer
// marks the pages after its bytes are stored, and the migration takes
// (reads and clears) the bits of a VM's partition before each pass.
//
// A mark after the store, never before: a take between a mark and its
// store would send the old page and clear its bit, and the new bytes would
// never be sent. A mark of work still in flight reaches a later take.
//
// Threads: mark and take from any thread, lock-free. Marking when off is
// one relaxed load.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

namespace vgpu::gpu {

class DirtyLog {
 public:
  static constexpr uint64_t PAGE = 4096;  // QEMU's migration granule
  static constexpr uint64_t PAGES_PER_WORD = 64;

  explicit DirtyLog(uint64_t bytes);

  // Users count: logging is on while any user has started it. The bits
  // are kept across a stop (a take after the last stop still sees them).
  void start() { users_.fetch_add(1, std::memory_order_acq_rel); }
  void stop() { users_.fetch_sub(1, std::memory_order_acq_rel); }
  bool logging() const { return users_.load(std::memory_order_relaxed) > 0; }

  // [addr, addr+len) was written (clipped to the log's range).
  void mark(uint64_t addr, uint64_t len) {
    if (len != 0 && logging()) mark_pages(addr, len);
  }
  // Moves the marks of pages [addr/PAGE, (addr+len)/PAGE) into out, bit i
  // of out = page addr/PAGE + i (little-endian words, QEMU's bitmap
  // layout), OR-ed into what out holds, and clears them here. addr and len
  // page-aligned; out has at least ceil(len/PAGE/64) words. Returns how
  // many pages were marked. Off the range or misaligned: 0, nothing moved.
  uint64_t take(uint64_t addr, uint64_t len, std::span<uint64_t> out);

  uint64_t bytes() const { return bytes_; }

 private:
  void mark_pages(uint64_t addr, uint64_t len);
  const uint64_t bytes_;
  const uint64_t words_;
  std::unique_ptr<std::atomic<uint64_t>[]> bits_;
  std::atomic<int> users_{0};
};

}  // namespace vgpu::gpu
