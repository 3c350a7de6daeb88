// SPDX-License-Identifier: GPL-2.0-or-later
// The MMU walk: one generic walker over the geometry rows of formats.h,
// with a small decoder per entry format (PDE, PTE).
#include "gpu/mem/mmu.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <utility>

namespace vgpu::gpu {
namespace {

using regs::FaultReason;

// ---------------------------------------------------------------- geometry as data

// The tables under one PDE, in the order the MMU consults them: a valid
// big PTE wins, else the small table (fermi.md 4.2).
struct TableKind {
  fmt::PageSize size;
  const fmt::Level* level;
  fmt::pde::TableRef fmt::pde::Decoded::*ref;
};
constexpr std::array<TableKind, 2> LOOKUP_ORDER{{
    {fmt::PageSize::big, &fmt::LPT, &fmt::pde::Decoded::big},
    {fmt::PageSize::small, &fmt::SPT, &fmt::pde::Decoded::small},
}};

constexpr uint64_t entry_addr(uint64_t table, const fmt::Level& level, uint64_t va) {
  return table + level.index(va) * level.entry_bytes;
}

// The last VA byte the context may touch.
uint64_t last_va(const AccessContext& ctx) { return std::min(ctx.limit, fmt::VA_LIMIT - 1); }

// Cold and out of line (it also keeps GCC 12 from a false maybe-uninitialized
// warning on the inlined optional chid).
[[gnu::cold, gnu::noinline]] std::unexpected<Fault> fault(const AccessContext& ctx, FaultReason reason, uint64_t va,
                                                          bool write) {
  return std::unexpected(Fault{reason, va, write, ctx.unit, ctx.inst, ctx.chid});
}

}  // namespace

// ---------------------------------------------------------------- HostView

HostView::HostView(HostView&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      window_(std::exchange(o.window_, nullptr)),
      window_bytes_(std::exchange(o.window_bytes_, 0)),
      sysmem_(std::exchange(o.sysmem_, false)),
      writes_(std::exchange(o.writes_, nullptr)),
      written_(std::exchange(o.written_, {})) {}

HostView& HostView::operator=(HostView&& o) noexcept {
  if (this != &o) {
    end_writes();
    if (window_) munmap(window_, window_bytes_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    window_ = std::exchange(o.window_, nullptr);
    window_bytes_ = std::exchange(o.window_bytes_, 0);
    sysmem_ = std::exchange(o.sysmem_, false);
    writes_ = std::exchange(o.writes_, nullptr);
    written_ = std::exchange(o.written_, {});
  }
  return *this;
}

HostView::~HostView() {
  end_writes();
  if (window_) munmap(window_, window_bytes_);
}

void HostView::end_writes() {
  if (!writes_) return;
  for (const auto& [phys, bytes] : written_) writes_->end_host_write(phys, bytes);
  writes_ = nullptr;
  written_.clear();
}

// ---------------------------------------------------------------- walk

void Mmu::set_system_memory(std::shared_ptr<SystemMemory> sysmem) {
  if (!sysmem) sysmem = std::make_shared<NoSystemMemory>();
  sysmem_.store(std::move(sysmem), std::memory_order_release);
}

std::optional<uint64_t> Mmu::read_entry(bool sysmem, uint64_t addr) const {
  if (!sysmem) return vram_.contains(addr, sizeof(uint64_t)) ? std::optional(vram_.read64(addr)) : std::nullopt;
  uint64_t v = 0;
  if (!system_memory()->read(addr, &v, sizeof v)) return std::nullopt;
  return v;
}

namespace {
constexpr bool is_sysmem(fmt::PdeTarget t) {
  return t == fmt::PdeTarget::sysmem_coherent || t == fmt::PdeTarget::sysmem_noncoherent;
}
constexpr bool is_sysmem(fmt::Target t) {
  return t == fmt::Target::sysmem_coherent || t == fmt::Target::sysmem_noncoherent;
}
}  // namespace

Walk<Mmu::TlbEntry> Mmu::walk(const AccessContext& ctx, uint64_t va, bool write) const {
  const auto& pd = fmt::PD;
  if (!vram_.contains(ctx.pdb, pd.entry_bytes)) return fault(ctx, FaultReason::out_of_vram, va, write);
  uint64_t pde_addr = entry_addr(ctx.pdb, pd, va);
  if (!vram_.contains(pde_addr, pd.entry_bytes)) return fault(ctx, FaultReason::out_of_vram, va, write);
  const fmt::pde::Decoded pde = fmt::pde::decode(vram_.read64(pde_addr));
  if (pde.empty()) return fault(ctx, FaultReason::pt_not_present, va, write);

  for (const TableKind& kind : LOOKUP_ORDER) {
    const fmt::pde::TableRef& table = pde.*kind.ref;
    if (table.target == fmt::PdeTarget::none) continue;
    const bool table_in_sysmem = is_sysmem(table.target);
    uint64_t pte_addr = entry_addr(table.addr, *kind.level, va);
    const auto raw = read_entry(table_in_sysmem, pte_addr);
    if (!raw) return fault(ctx, table_in_sysmem ? FaultReason::dma_error : FaultReason::out_of_vram, va, write);
    const fmt::pte::Decoded pte = fmt::pte::decode(*raw);
    if (!pte.valid) continue;

    uint64_t bytes = fmt::page_bytes(kind.size);
    const bool page_in_sysmem = is_sysmem(pte.aperture);
    if (!page_in_sysmem && pte.aperture != fmt::Target::vram)
      return fault(ctx, FaultReason::page_not_present, va, write);
    if (!fmt::pte::kind_supported(pte.kind)) return fault(ctx, FaultReason::invalid_storage_type, va, write);
    if (pte.addr % bytes != 0) return fault(ctx, FaultReason::page_not_present, va, write);
    if (page_in_sysmem) {
      if (!system_memory()->contains(pte.addr, bytes)) return fault(ctx, FaultReason::dma_error, va, write);
    } else if (!vram_.contains(pte.addr, bytes)) {
      return fault(ctx, FaultReason::out_of_vram, va, write);
    }
    return TlbEntry{pte.addr, bytes, pte.read_only, pte.priv, page_in_sysmem};
  }
  return fault(ctx, FaultReason::page_not_present, va, write);
}

// ---------------------------------------------------------------- TLB

Walk<Translation> Mmu::translate(const AccessContext& ctx, uint64_t va, bool write) {
  if (va > last_va(ctx)) return fault(ctx, FaultReason::vm_limit_exceeded, va, write);
  const uint64_t page = va >> fmt::SMALL_PAGE_SHIFT;

  std::optional<TlbEntry> cached;
  {
    std::shared_lock lock(mutex_);
    if (auto as = tlb_.find(ctx.pdb); as != tlb_.end()) {
      if (auto e = as->second.find(page); e != as->second.end()) cached = e->second;
    }
  }

  TlbEntry entry;
  if (cached) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    entry = *cached;
  } else {
    misses_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t generation = generation_.load(std::memory_order_acquire);
    auto walked = walk(ctx, va, write);
    if (!walked) return std::unexpected(walked.error());
    entry = *walked;
    std::unique_lock lock(mutex_);
    // An invalidate that raced the walk may have been meant for what we read.
    if (generation_.load(std::memory_order_relaxed) == generation) {
      if (tlb_entries_ >= TLB_CAPACITY) {
        tlb_.clear();
        tlb_entries_ = 0;
        evictions_.fetch_add(1, std::memory_order_relaxed);
      }
      if (tlb_[ctx.pdb].try_emplace(page, entry).second) ++tlb_entries_;
    }
  }

  if (entry.priv && !ctx.priv) return fault(ctx, FaultReason::page_system_only, va, write);
  if (write && entry.read_only) return fault(ctx, FaultReason::page_read_only, va, write);
  return Translation{entry.phys_page + (va & (entry.page_bytes - 1)), entry.page_bytes, entry.read_only, entry.sysmem};
}

void Mmu::invalidate(uint64_t pdb) {
  std::unique_lock lock(mutex_);
  generation_.fetch_add(1, std::memory_order_release);
  invalidates_.fetch_add(1, std::memory_order_relaxed);
  if (auto as = tlb_.find(pdb); as != tlb_.end()) {
    tlb_entries_ -= as->second.size();
    tlb_.erase(as);
  }
}

void Mmu::invalidate_all() {
  std::unique_lock lock(mutex_);
  generation_.fetch_add(1, std::memory_order_release);
  invalidates_.fetch_add(1, std::memory_order_relaxed);
  tlb_.clear();
  tlb_entries_ = 0;
}

TlbStats Mmu::stats() const {
  return TlbStats{hits_.load(std::memory_order_relaxed), misses_.load(std::memory_order_relaxed),
                  invalidates_.load(std::memory_order_relaxed), evictions_.load(std::memory_order_relaxed)};
}

// ---------------------------------------------------------------- ranges

template <typename Visit>
Walk<void> Mmu::visit_runs(const AccessContext& ctx, uint64_t va, uint64_t len, bool write, Visit&& visit) {
  if (len == 0) return {};
  const uint64_t last = last_va(ctx);
  if (va > last) return fault(ctx, FaultReason::vm_limit_exceeded, va, write);
  if (len - 1 > last - va) return fault(ctx, FaultReason::vm_limit_exceeded, last + 1, write);

  std::optional<PhysRun> run;
  uint64_t cur = va;
  uint64_t left = len;
  while (left > 0) {
    auto t = translate(ctx, cur, write);
    if (!t) return std::unexpected(t.error());
    const uint64_t chunk = std::min(left, t->page_bytes - (cur & (t->page_bytes - 1)));
    if (run && run->sysmem == t->sysmem && run->phys + run->bytes == t->phys) {
      run->bytes += chunk;
    } else {
      if (run && !visit(*run)) return {};
      run = PhysRun{cur, t->phys, chunk, t->sysmem};
    }
    cur += chunk;
    left -= chunk;
  }
  visit(*run);
  return {};
}

namespace {
constexpr auto ANY_RUN = [](const PhysRun&) { return true; };
}  // namespace

Walk<void> Mmu::for_each_run(const AccessContext& ctx, uint64_t va, uint64_t len, bool write,
                             const std::function<void(uint64_t, uint64_t, uint64_t)>& fn) {
  if (auto checked = visit_runs(ctx, va, len, write, ANY_RUN); !checked) return checked;
  return visit_runs(ctx, va, len, write, [&fn](const PhysRun& run) {
    fn(run.va, run.phys, run.bytes);
    return true;
  });
}

Walk<void> Mmu::for_each_phys_run(const AccessContext& ctx, uint64_t va, uint64_t len, bool write,
                                  const std::function<void(const PhysRun&)>& fn) {
  if (auto checked = visit_runs(ctx, va, len, write, ANY_RUN); !checked) return checked;
  return visit_runs(ctx, va, len, write, [&fn](const PhysRun& run) {
    fn(run);
    return true;
  });
}

bool runs_overlap(std::vector<PhysRun> a, std::vector<PhysRun> b) {
  // Sorted by aperture, then address: a merge walk that meets a run of the
  // other aperture only by moving past it.
  const auto key = [](const PhysRun& r) { return std::pair{r.sysmem, r.phys}; };
  std::ranges::sort(a, {}, key);
  std::ranges::sort(b, {}, key);
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const PhysRun& x = a[i];
    const PhysRun& y = b[j];
    if (x.sysmem == y.sysmem && x.phys < y.phys + y.bytes && y.phys < x.phys + x.bytes) return true;
    if (key(x) < key(y) || (x.sysmem == y.sysmem && x.phys + x.bytes <= y.phys + y.bytes))
      ++i;
    else
      ++j;
  }
  return false;
}

bool Mmu::copy_run(const PhysRun& run, std::byte* host, bool to_device) {
  if (run.sysmem) {
    auto sys = system_memory();
    return to_device ? sys->write(run.phys, host, run.bytes) : sys->read(run.phys, host, run.bytes);
  }
  // Through Vram's copies: a store is told to a device mirror around it.
  return to_device ? vram_.write(run.phys, host, run.bytes) : vram_.read(run.phys, host, run.bytes);
}

bool Mmu::touches_system_memory(const AccessContext& ctx, uint64_t va, uint64_t len) {
  bool sysmem = false;
  auto r = visit_runs(ctx, va, len, false, [&](const PhysRun& run) {
    sysmem = sysmem || run.sysmem;
    return !sysmem;
  });
  return r && sysmem;
}

Walk<void> Mmu::copy_runs(const AccessContext& ctx, uint64_t va, std::byte* host, uint64_t len, bool write) {
  bool failed = false;
  uint64_t failed_va = 0;
  auto r = visit_runs(ctx, va, len, write, [&](const PhysRun& run) {
    if (copy_run(run, host + (run.va - va), write)) return true;
    failed = true;
    failed_va = run.va;
    return false;
  });
  if (!r) return std::unexpected(r.error());
  if (failed) return fault(ctx, FaultReason::dma_error, failed_va, write);
  return {};
}

Walk<void> Mmu::read(const AccessContext& ctx, uint64_t va, void* dst, uint64_t len) {
  return copy_runs(ctx, va, static_cast<std::byte*>(dst), len, false);
}

Walk<void> Mmu::write(const AccessContext& ctx, uint64_t va, const void* src, uint64_t len) {
  if (auto checked = visit_runs(ctx, va, len, true, ANY_RUN); !checked) return checked;
  // copy_run only reads it when the copy goes to the device.
  return copy_runs(ctx, va, const_cast<std::byte*>(static_cast<const std::byte*>(src)), len, true);
}

Walk<uint32_t> Mmu::read32(const AccessContext& ctx, uint64_t va) {
  if (va % sizeof(uint32_t) == 0) {
    auto t = translate(ctx, va, false);
    if (!t) return std::unexpected(t.error());
    if (!t->sysmem) return vram_.read32(t->phys);
  }
  uint32_t value = 0;
  auto r = read(ctx, va, &value, sizeof value);
  if (!r) return std::unexpected(r.error());
  return value;
}

Walk<void> Mmu::write32(const AccessContext& ctx, uint64_t va, uint32_t value) {
  if (va % sizeof(uint32_t) == 0) {
    auto t = translate(ctx, va, true);
    if (!t) return std::unexpected(t.error());
    if (!t->sysmem) {
      vram_.write32(t->phys, value);
      return {};
    }
  }
  return write(ctx, va, &value, sizeof value);
}

Walk<HostView> Mmu::map_range(const AccessContext& ctx, uint64_t va, uint64_t len, bool write) {
  HostView view;
  // First pass: one run is a pointer into VRAM; count the others, up to
  // one past what a window may hold.
  size_t count = 0;
  size_t in_sysmem = 0;
  PhysRun first{};
  // A view for writing: its runs are stores in flight until it goes, and
  // marked dirty then (docs/migration.md §5, §8); set before the walk, so
  // that a fault part-way ends the runs begun.
  if (write) view.writes_ = &vram_;
  auto counted = visit_runs(ctx, va, len, write, [&](const PhysRun& run) {
    if (count++ == 0) first = run;
    // The view reads (and may write) these bytes on the host.
    if (!run.sysmem && count <= MAX_WINDOW_RUNS) {
      if (write) {
        vram_.begin_host_write(run.phys, run.bytes);
        view.written_.emplace_back(run.phys, run.bytes);
      } else {
        vram_.host_access(run.phys, run.bytes, false);
      }
    }
    in_sysmem += run.sysmem;
    return count <= MAX_WINDOW_RUNS;
  });
  if (!counted) return std::unexpected(counted.error());
  if (count == 0) return view;
  if (in_sysmem) {  // DMA, not a host view
    view.sysmem_ = in_sysmem == count;
    return view;
  }
  if (count == 1) {
    view.data_ = vram_.data() + first.phys;
    view.size_ = len;
    return view;
  }
  if (count > MAX_WINDOW_RUNS) return view;

  // A window of shared mappings of the VRAM memfd, one per run, at page
  // granularity. Every run boundary inside the range is a page boundary.
  const uint64_t page = fmt::SMALL_PAGE;
  if (static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) != page) return view;
  const uint64_t base = align_down(va, page);
  const uint64_t bytes = align_up(va + len, page) - base;
  if (bytes > MAX_WINDOW_BYTES) return view;
  void* window = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (window == MAP_FAILED) return view;
  auto* host = static_cast<std::byte*>(window);
  const int prot = PROT_READ | (write ? PROT_WRITE : 0);
  bool mapped = true;
  auto placed = visit_runs(ctx, va, len, write, [&](const PhysRun& run) {
    const uint64_t lo = align_down(run.va, page);
    const uint64_t hi = align_up(run.va + run.bytes, page);
    const uint64_t phys = run.phys - (run.va - lo);
    void* at = mmap(host + (lo - base), hi - lo, prot, MAP_FIXED | MAP_SHARED, vram_.fd(), static_cast<off_t>(phys));
    mapped = at != MAP_FAILED;
    return mapped;
  });
  if (!placed || !mapped) {
    munmap(window, bytes);
    if (!placed) return std::unexpected(placed.error());  // the tables changed under us
    return view;
  }
  view.window_ = window;
  view.window_bytes_ = bytes;
  view.data_ = host + (va - base);
  view.size_ = len;
  return view;
}

}  // namespace vgpu::gpu
