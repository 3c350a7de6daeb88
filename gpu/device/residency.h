// SPDX-License-Identifier: GPL-2.0-or-later
// Which side holds the valid bytes of each VRAM page when a device back end
// mirrors VRAM in GPU memory (docs/cuda.md, "Memory"): the host memfd, the
// device mirror, or both. Engine work asks for its pages on the device;
// every CPU-side access (through VramObserver) asks for them on the host.
// Pages a BAR maps directly are never left valid on the device alone.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "gpu/mem/dirty_log.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

// `writing`: engine work whose fence the GPU itself writes (docs/cuda.md,
// "Fences") is writing the page: the host bytes are stale once the fence
// is visible, before the engine thread has seen the work finish, so every
// CPU read downloads until finish_write makes the page `device`.
enum class Residency : uint8_t { host = 0, both = 1, device = 2, writing = 3 };

// The transfers a tracker needs: between the VRAM memfd's bytes and the
// device mirror, same physical address on both sides. Synchronous: done
// when they return.
class MirrorTransfers {
 public:
  virtual ~MirrorTransfers() = default;
  virtual void upload(uint64_t addr, uint64_t len) = 0;    // host -> device
  virtual void download(uint64_t addr, uint64_t len) = 0;  // device -> host
  // The host mapping under [addr, addr+len) was replaced (Vram::detach).
  virtual void host_remapped(uint64_t, uint64_t) {}
  // The same transfers ordered on an engine stream (the work's own), done
  // when that stream is synchronized. Default: synchronous.
  virtual void upload_on(uint32_t /*stream*/, uint64_t addr, uint64_t len) { upload(addr, len); }
  virtual void download_on(uint32_t /*stream*/, uint64_t addr, uint64_t len) { download(addr, len); }
};

// What one write_back did: bytes downloaded, and the device-only bytes
// still in its range (pages over budget, and pages being written).
struct WriteBack {
  uint64_t bytes = 0;
  uint64_t left = 0;
};

struct ResidencyStats {
  uint64_t uploads = 0;  // transfers (coalesced runs of pages)
  uint64_t upload_bytes = 0;
  uint64_t downloads = 0;
  uint64_t download_bytes = 0;
  // Prepares that found their range as a recent prepare of it left it
  // (no page back on the host, none direct-mapped) and so looked at no page.
  uint64_t clean_prepares = 0;
};

class ResidencyTracker final : public VramObserver {
 public:
  // The tracking granule: 16 small pages. Per-page state costs a launch
  // time per 4 KiB it touches (a 64 MB sgemm is 16K pages); a chunk moves
  // at most 60 KiB more than it must.
  static constexpr uint64_t PAGE = 64 * 1024;

  // `dirty`: the VRAM's dirty log (docs/migration.md §5, §8): every
  // download the tracker makes marks its bytes there once they are on the
  // host (a stream's after its synchronize, in finish_write).
  ResidencyTracker(uint64_t vram_bytes, MirrorTransfers& mirror, DirtyLog* dirty = nullptr);

  // Engine side, physical ranges. Before work reads a range: its pages
  // valid on the device. Before work writes a range: the same, except
  // pages the work overwrites wholly when `overwrite` (a write-only
  // buffer) need no upload. After work wrote a range: its pages valid on
  // the device only; direct-mapped pages are downloaded and stay both.
  //
  // With `stream`, direct-mapped pages move on the work's stream instead
  // (one synchronize for the whole launch): each reader uploads them for
  // itself anyway, so no other work relies on that upload. Before the
  // stream is synchronized, queue_direct_downloads puts the downloads of
  // written direct-mapped pages on it; finish_write(..., queued) then
  // only records them, unless a page became direct-mapped since.
  void prepare_read(uint64_t addr, uint64_t len, std::optional<uint32_t> stream = std::nullopt);
  void prepare_write(uint64_t addr, uint64_t len, bool overwrite, std::optional<uint32_t> stream = std::nullopt);
  [[nodiscard]] uint64_t queue_direct_downloads(uint64_t addr, uint64_t len, uint32_t stream);
  void finish_write(uint64_t addr, uint64_t len, std::optional<uint64_t> queued = std::nullopt);
  // Between prepare_write and finish_write, for work whose completion a
  // CPU may learn of before finish_write (a fence the GPU writes): the
  // range's pages that are not direct-mapped become `writing`, so a CPU
  // read of them downloads first whenever it comes (direct-mapped ones
  // are downloaded on the work's stream before the fence anyway).
  void begin_write(uint64_t addr, uint64_t len);

  // A CPU may touch these pages without telling anyone (BAR remap, a
  // native direct window, a detached partition): download any that are
  // device-only; from now on they are direct-mapped.
  void mark_direct(uint64_t addr, uint64_t len);

  // VramObserver: CPU-side accesses and remapped ranges.
  void host_access(uint64_t addr, uint64_t len, bool write) override;
  // A CPU store between these: its pages are `host` when begin returns
  // and no upload of them starts before end (an upload that finds one in
  // flight waits for it), so the device never gets the page without the
  // store and later downloads it over the host (docs/migration.md §8).
  void begin_host_write(uint64_t addr, uint64_t len) override;
  void end_host_write(uint64_t addr, uint64_t len) override;
  void host_remapped(uint64_t addr, uint64_t len, bool shared) override;

  // Live migration (docs/migration.md §8). write_back downloads the
  // `device` pages of [addr, addr+len), in page order, until `budget`
  // bytes moved (whole pages: at most one page past it), leaves
  // them `both` and marks them dirty; `writing` pages are left for their
  // work's finish. A freeze calls it with no budget once engines are idle.
  WriteBack write_back(uint64_t addr, uint64_t len, uint64_t budget);
  // Bytes valid only on the device (`device` and `writing` pages): all of
  // VRAM (a counter kept by set()), or one range (its pages looked at).
  uint64_t device_only_bytes() const { return device_only_.load(std::memory_order_acquire) * PAGE; }
  uint64_t device_only_bytes(uint64_t addr, uint64_t len) const;

  Residency state(uint64_t addr) const;
  bool direct(uint64_t addr) const;
  ResidencyStats stats() const;
  // Prepares whose upload waited for a CPU store in flight on its pages
  // (read without the lock: a test looks while an upload waits).
  uint64_t writer_waits() const { return writer_waits_.load(std::memory_order_acquire); }

  // How many ranges are remembered as prepared (clean_).
  static constexpr size_t CLEAN_RANGES = 64;

 private:
  uint64_t first_page(uint64_t addr) const { return addr / PAGE; }
  uint64_t end_page(uint64_t addr, uint64_t len) const { return (addr + len + PAGE - 1) / PAGE; }
  // A CPU read of the page must download it first.
  static bool stale_on_host(Residency r) { return r == Residency::device || r == Residency::writing; }
  Residency get(uint64_t page) const { return static_cast<Residency>(state_[page].load(std::memory_order_acquire)); }
  // Lock held (every state change is). Keeps device_only_ as it goes.
  // Sequentially consistent with writers_: a store in begin_host_write
  // and an upload's set and check are ordered one way or the other.
  void set(uint64_t page, Residency r) {
    const auto old = static_cast<Residency>(state_[page].exchange(static_cast<uint8_t>(r), std::memory_order_seq_cst));
    if (stale_on_host(old) != stale_on_host(r)) device_only_.fetch_add(stale_on_host(r) ? 1 : ~uint64_t{0});
  }
  void mark_dirty(uint64_t addr, uint64_t len) {
    if (dirty_) dirty_->mark(addr, len);
  }
  // Transfers pages [first, end) for which `need` holds, in coalesced
  // runs, then sets each transferred page to `after`. Lock held.
  template <typename Need>
  void move_pages(uint64_t first, uint64_t end, bool up, Need need, Residency after,
                  std::optional<uint32_t> stream = std::nullopt);
  // Downloads the bytes of [addr, addr+len) on pages `pick` selects.
  template <typename Pick>
  void download_written(uint64_t addr, uint64_t len, Pick pick, std::optional<uint32_t> stream);
  // Lock held: the CPU side of a CPU access (downloads of stale pages,
  // and for a write the pages made `host`).
  void cpu_access_locked(uint64_t first, uint64_t end, bool write);
  // Lock held, before an upload of pages [first, end) that are no longer
  // `host`: whether a CPU store is in flight on any of them.
  bool writers_in(uint64_t first, uint64_t end) const;
  // Runs `moves` (move_pages uploads, lock held by l) until none found a
  // store in flight: one that did put its pages back and set writer_seen_,
  // and the lock is let go while the store finishes. A writer holds its
  // count across a whole piece of work (a host view, a user kernel) and
  // may take the lock meanwhile, so the upload never waits holding it
  // (docs/migration.md §8, lock order).
  template <typename Moves>
  void upload_between_writes(std::unique_lock<std::mutex>& l, Moves moves);
  bool is_direct(uint64_t page) const { return direct_[page].load(std::memory_order_acquire); }
  bool clamp(uint64_t& addr, uint64_t& len) const;

  // A range that a prepare left with every page valid on the device and
  // none direct-mapped, while host_generation_ was `generation`: until a
  // page goes back to the host (or becomes direct-mapped), preparing it
  // again the same way has nothing to do. A stream of launches on the
  // same buffers (gemm1: a thousand 64 KiB pages) then costs one look-up.
  enum class PrepareKind : uint8_t { read, overwrite, write };
  struct CleanRange {
    uint64_t addr = 0, len = 0, generation = ~uint64_t{0};
    PrepareKind kind = PrepareKind::read;
  };
  // Lock held. Whether [addr, len) is remembered clean for `kind`.
  bool clean(uint64_t addr, uint64_t len, PrepareKind kind) const;
  // Lock held: after a prepare of [addr, len) that left no page host or
  // direct, and that clean() did not find (moving pages bumps no generation).
  void remember_clean(uint64_t addr, uint64_t len, PrepareKind kind);
  // Lock held: a page went back to the host or became direct-mapped.
  void host_changed() { ++host_generation_; }
  bool any_direct(uint64_t first, uint64_t end) const;

  uint64_t pages_;
  MirrorTransfers& mirror_;
  DirtyLog* dirty_;
  std::atomic<uint64_t> device_only_{0};  // pages stale_on_host
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
  std::unique_ptr<std::atomic<bool>[]> direct_;
  std::unique_ptr<std::atomic<uint32_t>[]> writers_;  // CPU stores in flight, per page
  std::atomic<uint64_t> writer_waits_{0};
  bool writer_seen_ = false;  // lock held: an upload in move_pages found a store in flight
  mutable std::mutex mutex_;  // state changes that transfer, and stats_
  ResidencyStats stats_;
  uint64_t direct_generation_ = 0;  // bumped when a page becomes direct-mapped (lock held)
  uint64_t host_generation_ = 0;    // bumped by host_changed() (lock held)
  std::array<CleanRange, CLEAN_RANGES> clean_{};
  size_t clean_next_ = 0;  // the entry remember_clean replaces next
};

}  // namespace vgpu::gpu
