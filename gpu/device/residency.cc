// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/device/residency.h"

#include <algorithm>
#include <thread>

namespace vgpu::gpu {
namespace {

// Calls each(p, q) for every longest run [p, q) of pages in [first, end)
// that `pick` selects, in page order.
template <typename Pick, typename Each>
void for_each_run(uint64_t first, uint64_t end, Pick pick, Each each) {
  uint64_t p = first;
  while (p < end) {
    if (!pick(p)) {
      ++p;
      continue;
    }
    uint64_t q = p + 1;
    while (q < end && pick(q)) ++q;
    each(p, q);
    p = q;
  }
}

}  // namespace

ResidencyTracker::ResidencyTracker(uint64_t vram_bytes, MirrorTransfers& mirror, DirtyLog* dirty)
    : pages_((vram_bytes + PAGE - 1) / PAGE),
      mirror_(mirror),
      dirty_(dirty),
      state_(new std::atomic<uint8_t>[pages_]),
      direct_(new std::atomic<bool>[pages_]),
      writers_(new std::atomic<uint32_t>[pages_]) {
  for (uint64_t p = 0; p < pages_; ++p) {
    state_[p].store(static_cast<uint8_t>(Residency::host), std::memory_order_relaxed);
    direct_[p].store(false, std::memory_order_relaxed);
    writers_[p].store(0, std::memory_order_relaxed);
  }
}

bool ResidencyTracker::clamp(uint64_t& addr, uint64_t& len) const {
  const uint64_t bytes = pages_ * PAGE;
  if (len == 0 || addr >= bytes) return false;
  if (len > bytes - addr) len = bytes - addr;
  return true;
}

template <typename Need>
void ResidencyTracker::move_pages(uint64_t first, uint64_t end, bool up, Need need, Residency after,
                                  std::optional<uint32_t> stream) {
  for_each_run(first, end, need, [&](uint64_t p, uint64_t q) {
    const uint64_t bytes = (q - p) * PAGE;
    if (up) {
      if (writer_seen_) return;  // the caller tries again without the lock
      // The pages leave `host` before the writers are looked at: a store
      // that begins after this finds them so and waits for the lock.
      std::vector<Residency> before(q - p);
      for (uint64_t i = p; i < q; ++i) {
        before[i - p] = get(i);
        set(i, after);
      }
      if (writers_in(p, q)) {
        // A store in flight: the pages go back as they were, and the
        // upload waits for it with the lock free (the writer may need it).
        for (uint64_t i = p; i < q; ++i) set(i, before[i - p]);
        writer_seen_ = true;
        return;
      }
      if (stream)
        mirror_.upload_on(*stream, p * PAGE, bytes);
      else
        mirror_.upload(p * PAGE, bytes);
      ++stats_.uploads;
      stats_.upload_bytes += bytes;
    } else {
      mirror_.download(p * PAGE, bytes);
      mark_dirty(p * PAGE, bytes);  // after the bytes (docs/migration.md §5)
      ++stats_.downloads;
      stats_.download_bytes += bytes;
      for (uint64_t i = p; i < q; ++i) set(i, after);
    }
  });
}

bool ResidencyTracker::clean(uint64_t addr, uint64_t len, PrepareKind kind) const {
  for (const CleanRange& c : clean_)
    if (c.generation == host_generation_ && c.addr == addr && c.len == len && c.kind == kind) return true;
  return false;
}

void ResidencyTracker::remember_clean(uint64_t addr, uint64_t len, PrepareKind kind) {
  clean_[clean_next_] = CleanRange{addr, len, host_generation_, kind};
  clean_next_ = (clean_next_ + 1) % CLEAN_RANGES;
}

bool ResidencyTracker::any_direct(uint64_t first, uint64_t end) const {
  for (uint64_t p = first; p < end; ++p)
    if (is_direct(p)) return true;
  return false;
}

void ResidencyTracker::prepare_read(uint64_t addr, uint64_t len, std::optional<uint32_t> stream) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  std::unique_lock l(mutex_);
  if (clean(addr, len, PrepareKind::read)) {
    ++stats_.clean_prepares;
    return;
  }
  // Direct-mapped pages: a guest may have written them since any upload.
  upload_between_writes(l, [&] {
    if (stream) {
      move_pages(
          first, end, true, [this](uint64_t p) { return is_direct(p); }, Residency::both, stream);
      move_pages(
          first, end, true, [this](uint64_t p) { return get(p) == Residency::host; }, Residency::both);
    } else {
      move_pages(
          first, end, true, [this](uint64_t p) { return get(p) == Residency::host || is_direct(p); }, Residency::both);
    }
  });
  if (!any_direct(first, end)) remember_clean(addr, len, PrepareKind::read);
}

void ResidencyTracker::prepare_write(uint64_t addr, uint64_t len, bool overwrite, std::optional<uint32_t> stream) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  // Pages the work covers wholly, if it overwrites them: their old bytes
  // do not matter (a direct-mapped one is downloaded after the work).
  const uint64_t whole_first = overwrite ? (addr + PAGE - 1) / PAGE : end;
  const uint64_t whole_end = overwrite ? (addr + len) / PAGE : end;
  auto partial = [&](uint64_t p) { return p < whole_first || p >= whole_end; };
  // A direct-mapped page's device copy is never trusted (readers upload
  // it, the written bytes are downloaded): work that only writes it needs
  // no upload, however little of it the work writes.
  auto direct_needed = [&](uint64_t p) { return !overwrite && is_direct(p); };
  auto host_needed = [&](uint64_t p) { return partial(p) && !is_direct(p) && get(p) == Residency::host; };
  const PrepareKind kind = overwrite ? PrepareKind::overwrite : PrepareKind::write;
  std::unique_lock l(mutex_);
  if (clean(addr, len, kind)) {
    ++stats_.clean_prepares;
    return;
  }
  upload_between_writes(l, [&] {
    if (stream) {
      move_pages(first, end, true, direct_needed, Residency::both, stream);
      move_pages(first, end, true, host_needed, Residency::both);
    } else {
      move_pages(
          first, end, true, [&](uint64_t p) { return direct_needed(p) || host_needed(p); }, Residency::both);
    }
  });
  // Whole pages count as valid on both sides while the work runs: a CPU
  // write meanwhile turns them to host, which finish_write notices.
  for (uint64_t p = std::max(first, whole_first); p < std::min(end, whole_end); ++p)
    if (get(p) == Residency::host) set(p, Residency::both);
  if (!any_direct(first, end)) remember_clean(addr, len, kind);
}

template <typename Pick>
void ResidencyTracker::download_written(uint64_t addr, uint64_t len, Pick pick, std::optional<uint32_t> stream) {
  // Exactly the bytes the work wrote, never the rest of a page: a CPU may
  // have written those meanwhile (a fence next to a result).
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  for_each_run(first, end, pick, [&](uint64_t p, uint64_t q) {
    const uint64_t from = std::max(addr, p * PAGE), to = std::min(addr + len, q * PAGE);
    // A stream's download is done at its synchronize: finish_write marks it.
    if (stream) {
      mirror_.download_on(*stream, from, to - from);
    } else {
      mirror_.download(from, to - from);
      mark_dirty(from, to - from);
    }
    ++stats_.downloads;
    stats_.download_bytes += to - from;
  });
}

uint64_t ResidencyTracker::queue_direct_downloads(uint64_t addr, uint64_t len, uint32_t stream) {
  std::lock_guard l(mutex_);
  if (!clamp(addr, len)) return direct_generation_;
  download_written(
      addr, len, [this](uint64_t p) { return is_direct(p); }, stream);
  return direct_generation_;
}

void ResidencyTracker::finish_write(uint64_t addr, uint64_t len, std::optional<uint64_t> queued) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  std::lock_guard l(mutex_);
  const bool downloaded = queued && *queued == direct_generation_;
  // Direct-mapped pages are never left valid on the device alone, and a
  // page a CPU wrote while the work ran (now host) keeps that write: both
  // get the written bytes downloaded (direct ones already were, on the
  // work's stream, unless a page became direct-mapped since).
  download_written(
      addr, len, [&](uint64_t p) { return is_direct(p) ? !downloaded : get(p) == Residency::host; }, std::nullopt);
  // The stream's downloads of direct-mapped pages are on the host now
  // (the caller synchronized it): their marks belong here, not at queueing.
  if (downloaded)
    for_each_run(
        first, end, [this](uint64_t p) { return is_direct(p); },
        [&](uint64_t p, uint64_t q) {
          const uint64_t from = std::max(addr, p * PAGE), to = std::min(addr + len, q * PAGE);
          mark_dirty(from, to - from);
        });
  for (uint64_t p = first; p < end; ++p) {
    if (is_direct(p))
      set(p, Residency::both);
    else if (get(p) != Residency::host)
      set(p, Residency::device);
  }
}

void ResidencyTracker::begin_write(uint64_t addr, uint64_t len) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  std::lock_guard l(mutex_);
  // A page a CPU wrote since the prepare (host) keeps its bytes: the
  // written range is downloaded over them at finish_write, as without.
  for (uint64_t p = first; p < end; ++p)
    if (!is_direct(p) && get(p) == Residency::both) set(p, Residency::writing);
}

void ResidencyTracker::mark_direct(uint64_t addr, uint64_t len) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  // Fast path: already direct-mapped (the BAR's mapper asks per page).
  bool all = true;
  for (uint64_t p = first; p < end && all; ++p) all = direct_[p].load(std::memory_order_acquire);
  if (all) return;
  std::lock_guard l(mutex_);
  move_pages(
      first, end, false, [this](uint64_t p) { return stale_on_host(get(p)); }, Residency::both);
  for (uint64_t p = first; p < end; ++p) direct_[p].store(true, std::memory_order_release);
  ++direct_generation_;
  host_changed();
}

bool ResidencyTracker::writers_in(uint64_t first, uint64_t end) const {
  for (uint64_t p = first; p < end; ++p)
    if (writers_[p].load(std::memory_order_seq_cst) != 0) return true;
  return false;
}

template <typename Moves>
void ResidencyTracker::upload_between_writes(std::unique_lock<std::mutex>& l, Moves moves) {
  bool waited = false;
  for (;;) {
    writer_seen_ = false;
    moves();
    if (!writer_seen_) return;
    if (!waited) writer_waits_.fetch_add(1, std::memory_order_release);
    waited = true;
    l.unlock();
    std::this_thread::yield();
    l.lock();
  }
}

void ResidencyTracker::begin_host_write(uint64_t addr, uint64_t len) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  // Fast path, no lock: announced, then every page found `host`. An
  // upload sets its pages first and then looks at writers_, so one of the
  // two sees the other (both sequentially consistent).
  for (uint64_t p = first; p < end; ++p) writers_[p].fetch_add(1, std::memory_order_seq_cst);
  bool host = true;
  for (uint64_t p = first; p < end && host; ++p)
    host = state_[p].load(std::memory_order_seq_cst) == static_cast<uint8_t>(Residency::host);
  if (host) return;
  for (uint64_t p = first; p < end; ++p) writers_[p].fetch_sub(1, std::memory_order_release);
  std::lock_guard l(mutex_);
  cpu_access_locked(first, end, true);
  // Announced before the lock goes: no upload of these pages until end.
  for (uint64_t p = first; p < end; ++p) writers_[p].fetch_add(1, std::memory_order_seq_cst);
}

void ResidencyTracker::end_host_write(uint64_t addr, uint64_t len) {
  if (!clamp(addr, len)) return;
  for (uint64_t p = first_page(addr); p < end_page(addr, len); ++p) writers_[p].fetch_sub(1, std::memory_order_release);
}

void ResidencyTracker::host_access(uint64_t addr, uint64_t len, bool write) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  // Fast path, no lock: nothing to download and nothing to invalidate.
  bool settled = true;
  for (uint64_t p = first; p < end && settled; ++p)
    settled = write ? get(p) == Residency::host : !stale_on_host(get(p));
  if (settled) return;
  std::lock_guard l(mutex_);
  cpu_access_locked(first, end, write);
}

void ResidencyTracker::cpu_access_locked(uint64_t first, uint64_t end, bool write) {
  // A page being written stays so: its next read downloads again (the
  // work may still be writing it; a read before the fence sees old or new
  // bytes, as on hardware).
  move_pages(
      first, end, false, [this](uint64_t p) { return get(p) == Residency::device; }, Residency::both);
  move_pages(
      first, end, false, [this](uint64_t p) { return get(p) == Residency::writing; }, Residency::writing);
  if (write) {
    for (uint64_t p = first; p < end; ++p) set(p, Residency::host);
    host_changed();
  }
}

void ResidencyTracker::host_remapped(uint64_t addr, uint64_t len, bool shared) {
  if (!clamp(addr, len)) return;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  std::lock_guard l(mutex_);
  mirror_.host_remapped(addr, len);
  // New backing: its bytes are what the host holds now.
  for (uint64_t p = first; p < end; ++p) {
    set(p, Residency::host);
    direct_[p].store(shared, std::memory_order_release);
  }
  ++direct_generation_;
  host_changed();
}

WriteBack ResidencyTracker::write_back(uint64_t addr, uint64_t len, uint64_t budget) {
  WriteBack w;
  if (!clamp(addr, len)) return w;
  const uint64_t first = first_page(addr), end = end_page(addr, len);
  std::lock_guard l(mutex_);
  move_pages(
      first, end, false,
      [&](uint64_t p) {
        if (get(p) != Residency::device || w.bytes >= budget) return false;
        w.bytes += PAGE;
        return true;
      },
      Residency::both);
  w.left = device_only_bytes(addr, len);
  return w;
}

uint64_t ResidencyTracker::device_only_bytes(uint64_t addr, uint64_t len) const {
  if (!clamp(addr, len)) return 0;
  uint64_t bytes = 0;
  for (uint64_t p = first_page(addr); p < end_page(addr, len); ++p)
    if (stale_on_host(get(p))) bytes += PAGE;
  return bytes;
}

Residency ResidencyTracker::state(uint64_t addr) const {
  return addr / PAGE < pages_ ? get(addr / PAGE) : Residency::host;
}

bool ResidencyTracker::direct(uint64_t addr) const {
  return addr / PAGE < pages_ && direct_[addr / PAGE].load(std::memory_order_acquire);
}

ResidencyStats ResidencyTracker::stats() const {
  std::lock_guard l(mutex_);
  return stats_;
}

}  // namespace vgpu::gpu
