// SPDX-License-Identifier: GPL-2.0-or-later
// The GPU MMU of the software model: walks Fermi page tables in VRAM or
// system memory (docs/spec/vgpu.md, "Page tables"), caches translations in
// a TLB that keeps stale entries until invalidated, and reports faults.
// Pages in system memory are reached by DMA through the SystemMemory the
// host supplies (none by default: every sysmem access faults dma_error).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <shared_mutex>
#include <optional>
#include <utility>
#include <unordered_map>
#include <vector>

#include "gpu/mem/system_memory.h"
#include "gpu/mem/vram.h"
#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

// Who accesses which address space.
struct AccessContext {
  uint64_t pdb = 0;    // page directory VRAM address
  uint64_t limit = 0;  // last valid VA byte (instance block +0x208)
  regs::FaultUnit unit = regs::FaultUnit::pfifo;
  uint64_t inst = 0;             // instance block address, reported with faults
  std::optional<uint32_t> chid;  // channel, reported with faults
  bool priv = false;             // privileged client (may use PRIV pages)
};

struct Fault {
  regs::FaultReason reason;
  uint64_t va;
  bool write;
  regs::FaultUnit unit;
  uint64_t inst;
  std::optional<uint32_t> chid;
};

// Translation of one byte address; valid up to the end of its page.
struct Translation {
  uint64_t phys;  // VRAM address, or bus address when sysmem
  uint64_t page_bytes;
  bool read_only;
  bool sysmem = false;
};

// One physically contiguous piece of a VA range.
struct PhysRun {
  uint64_t va;
  uint64_t phys;  // VRAM address, or bus address when sysmem
  uint64_t bytes;
  bool sysmem = false;
};

// Whether a run of `a` and a run of `b` share bytes: VRAM runs are compared
// with VRAM runs and sysmem runs with sysmem runs only (a VRAM address and
// a bus address with the same number are different bytes). Any order.
bool runs_overlap(std::vector<PhysRun> a, std::vector<PhysRun> b);

template <typename T>
using Walk = std::expected<T, Fault>;

// A contiguous host view of a GPU VA range (compute kernels read and write
// through it). Physically contiguous ranges are a pointer into VRAM;
// others are a window of shared mappings of the VRAM memfd, one mapping
// per physically contiguous run, within the bounds Mmu::MAX_WINDOW_RUNS
// and MAX_WINDOW_BYTES (host resources a guest's page tables must not be
// able to exhaust: mappings, address space, host page tables).
class HostView {
 public:
  HostView() = default;
  HostView(HostView&&) noexcept;
  HostView& operator=(HostView&&) noexcept;
  ~HostView();
  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  bool windowed() const { return window_ != nullptr; }
  // Every byte of the range is in system memory: there is no host view
  // (data() == nullptr); Mmu::read/write reach it by DMA.
  bool sysmem() const { return sysmem_; }

 private:
  friend class Mmu;
  // A view mapped for writing, when it goes: its runs' stores are done
  // (end_host_write), then they go into the dirty log.
  void end_writes();
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  void* window_ = nullptr;  // mmap'd window to unmap, if any
  uint64_t window_bytes_ = 0;
  bool sysmem_ = false;
  // A view mapped for writing announces its VRAM runs to the VRAM's
  // observer as stores in flight (begin_host_write) while it lives, so no
  // upload of their pages misses its stores, and marks them in the dirty
  // log when it goes: after the writes, never before.
  Vram* writes_ = nullptr;
  std::vector<std::pair<uint64_t, uint64_t>> written_;  // (phys, bytes)
};

struct TlbStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t invalidates = 0;  // invalidate() and invalidate_all() calls
  uint64_t evictions = 0;    // whole-TLB drops because it reached TLB_CAPACITY
};

class Mmu {
 public:
  // Cached translations (4 KiB granules) before the TLB drops them all.
  static constexpr size_t TLB_CAPACITY = size_t{1} << 16;
  // A window stitches at most this many runs (one host mapping each;
  // Linux allows 65,530 per process by default) over at most this many
  // bytes; a range beyond either has no host view (data() == nullptr).
  static constexpr size_t MAX_WINDOW_RUNS = size_t{1} << 14;
  static constexpr uint64_t MAX_WINDOW_BYTES = uint64_t{4} << 30;

  explicit Mmu(Vram& vram) : vram_(vram), sysmem_(std::make_shared<NoSystemMemory>()) {}
  Vram& vram() { return vram_; }

  // The system memory sysmem PTEs and tables name (nullptr: none). Safe
  // while engines run; cached translations stay until invalidated.
  void set_system_memory(std::shared_ptr<SystemMemory> sysmem);
  std::shared_ptr<SystemMemory> system_memory() const { return sysmem_.load(std::memory_order_acquire); }

  // Checks the limit, then the TLB, then walks the tables. Faults are
  // never cached; permission checks (read-only, priv) apply on every hit.
  Walk<Translation> translate(const AccessContext& ctx, uint64_t va, bool write);

  // Calls fn(va, phys, bytes) for each physically contiguous run of [va, va+len).
  // The whole range is translated first: on a fault, fn is never called
  // (unless the tables change between the check and the calls: then the
  // calls stop at the fault). Host memory used does not grow with len.
  Walk<void> for_each_run(const AccessContext& ctx, uint64_t va, uint64_t len, bool write,
                          const std::function<void(uint64_t va, uint64_t phys, uint64_t bytes)>& fn);
  // The same with each run whole: fn(run), its aperture included.
  Walk<void> for_each_phys_run(const AccessContext& ctx, uint64_t va, uint64_t len, bool write,
                               const std::function<void(const PhysRun&)>& fn);
  // Whether any page of [va, va + len) lies in system memory (a range that
  // faults: false, and whoever walks it next gets the fault).
  bool touches_system_memory(const AccessContext& ctx, uint64_t va, uint64_t len);

  // On a fault, read() may have filled part of dst; write() checks the
  // whole range before it writes. Runs in system memory are one DMA
  // transfer each; a transfer that fails (the memory went away since the
  // walk) faults dma_error at the run's first byte.
  Walk<void> read(const AccessContext& ctx, uint64_t va, void* dst, uint64_t len);
  Walk<void> write(const AccessContext& ctx, uint64_t va, const void* src, uint64_t len);
  // Aligned: one atomic VRAM access. Unaligned: byte copies (may cross pages).
  Walk<uint32_t> read32(const AccessContext& ctx, uint64_t va);
  Walk<void> write32(const AccessContext& ctx, uint64_t va, uint32_t value);

  // A host view of [va, va+len). If the host cannot map the window (mmap
  // fails, or the range needs more than MAX_WINDOW_RUNS runs or spans more
  // than MAX_WINDOW_BYTES), or any of it is system memory, the view is
  // empty: data() == nullptr (and sysmem() says whether all of it is). The walk
  // stops at MAX_WINDOW_RUNS + 1 runs, so a fault beyond them is not
  // reported here. len == 0 gives an empty view.
  Walk<HostView> map_range(const AccessContext& ctx, uint64_t va, uint64_t len, bool write);

  // Drop cached translations of one address space, or of all.
  void invalidate(uint64_t pdb);
  void invalidate_all();
  TlbStats stats() const;
  // Bumped by every invalidate: what was translated at one value may be
  // used as long as it holds (gpu/engines/placement_cache.h).
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  // What a PTE said, for one page; permissions are checked per access.
  struct TlbEntry {
    uint64_t phys_page;  // physical address of the page start
    uint64_t page_bytes;
    bool read_only;
    bool priv;
    bool sysmem;
  };
  Walk<TlbEntry> walk(const AccessContext& ctx, uint64_t va, bool write) const;
  // Visits the physically contiguous runs of [va, va+len) in VA order;
  // stops at the first fault, or when visit returns false.
  template <typename Visit>
  Walk<void> visit_runs(const AccessContext& ctx, uint64_t va, uint64_t len, bool write, Visit&& visit);

  // A table entry at `addr` of a table in VRAM or system memory.
  std::optional<uint64_t> read_entry(bool sysmem, uint64_t addr) const;
  // One run's bytes to or from host memory; false when its DMA failed.
  bool copy_run(const PhysRun& run, std::byte* host, bool to_device);
  // Every run of [va, va+len) to or from `host`: a fault from the walk, or
  // a DMA error at the first run whose copy failed.
  Walk<void> copy_runs(const AccessContext& ctx, uint64_t va, std::byte* host, uint64_t len, bool write);

  Vram& vram_;
  std::atomic<std::shared_ptr<SystemMemory>> sysmem_;
  mutable std::shared_mutex mutex_;
  // pdb -> (va >> SMALL_PAGE_SHIFT) -> entry
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, TlbEntry>> tlb_;
  size_t tlb_entries_ = 0;
  // Bumped by every invalidate: a walk that raced one is not cached.
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> invalidates_{0};
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace vgpu::gpu
