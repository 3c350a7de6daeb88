// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/vmm.h"

#include <algorithm>

#include "driver/mmu_flush.h"
#include "driver/msg.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

Result<uint64_t> TableMemory::alloc(uint64_t bytes) {
  auto r = heap_.alloc(bytes, fmt::TABLE_ALIGN);
  if (r || !fallback_) return r;
  return fallback_->alloc(bytes, fmt::TABLE_ALIGN);
}

void TableMemory::free(uint64_t addr) {
  if (heap_.allocation_size(addr)) {
    (void)heap_.free(addr);
  } else if (fallback_) {
    (void)fallback_->free(addr);
  }
}

Result<std::unique_ptr<Vmm>> Vmm::create(std::string name, InstMem& mem, TableMemory& tables, uint64_t size, bool bar) {
  if (size == 0 || size > fmt::VA_LIMIT)
    return fail(Errc::invalid_argument, msg("{}: address space size {} out of range", name, hex(size)));
  std::unique_ptr<Vmm> vmm(new Vmm(std::move(name), mem, tables, size, bar));
  auto pd = tables.alloc(fmt::PD.table_bytes());
  if (!pd) return std::unexpected(pd.error().context(vmm->name_ + ": page directory"));
  vmm->pd_ = *pd;
  const uint64_t pdes = (size + fmt::PDE_SPAN - 1) / fmt::PDE_SPAN;
  vmm->pdes_.resize(pdes);
  // Entries past the limit are never walked: clear only those in range.
  mem.fill(vmm->pd_, pdes * fmt::PD.entry_bytes);
  return vmm;
}

Vmm::~Vmm() {
  for (const Pde& p : pdes_) {
    if (p.spt) tables_.free(p.spt);
    if (p.lpt) tables_.free(p.lpt);
  }
  if (pd_) tables_.free(pd_);
}

uint64_t Vmm::entries_in_range(uint64_t pde_index, const fmt::Level& level) const {
  const uint64_t start = pde_index * fmt::PDE_SPAN;
  const uint64_t end = std::min(size_, start + fmt::PDE_SPAN);
  return (end - start + (uint64_t{1} << level.va_lo) - 1) >> level.va_lo;
}

Result<uint64_t> Vmm::table(uint64_t pde_index, fmt::PageSize ps, bool create) {
  Pde& p = pdes_[pde_index];
  uint64_t& slot = ps == fmt::PageSize::big ? p.lpt : p.spt;
  if (slot || !create) return slot;
  const fmt::Level& level = fmt::table_level(ps);
  auto t = tables_.alloc(level.table_bytes());
  if (!t)
    return std::unexpected(
        t.error().context(msg("{}: {} for VA {}", name_, level.name, hex(pde_index * fmt::PDE_SPAN))));
  mem_.fill(*t, entries_in_range(pde_index, level) * level.entry_bytes);
  slot = *t;
  mem_.write64(pd_ + pde_index * fmt::PD.entry_bytes, fmt::pde::make(p.spt, p.lpt));
  return slot;
}

Status Vmm::check(uint64_t va, uint64_t bytes, fmt::PageSize ps, const char* what) const {
  const uint64_t page = fmt::page_bytes(ps);
  if (bytes == 0 || va % page || bytes % page || va > size_ || bytes > size_ - va)
    return fail(Errc::invalid_argument, msg("{}: cannot {} [{}, +{}) with {} KiB pages (size {})", name_, what, hex(va),
                                            hex(bytes), page / 1024, hex(size_)));
  return {};
}

Status Vmm::map(uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize ps, fmt::pte::Flags flags) {
  if (auto ok = check(va, bytes, ps, "map"); !ok) return ok;
  const uint64_t page = fmt::page_bytes(ps);
  if (phys % page)
    return fail(Errc::invalid_argument, msg("{}: VRAM address {} not aligned to the page", name_, hex(phys)));
  const fmt::Level& level = fmt::table_level(ps);
  for (uint64_t off = 0; off < bytes; off += page) {
    const uint64_t v = va + off;
    auto t = table(fmt::PD.index(v), ps, true);
    if (!t) return std::unexpected(t.error());
    mem_.write64(*t + level.index(v) * level.entry_bytes, fmt::pte::make(phys + off, flags));
    ++ptes_written_;
  }
  return {};
}

Status Vmm::unmap(uint64_t va, uint64_t bytes, fmt::PageSize ps) {
  if (auto ok = check(va, bytes, ps, "unmap"); !ok) return ok;
  const uint64_t page = fmt::page_bytes(ps);
  const fmt::Level& level = fmt::table_level(ps);
  for (uint64_t off = 0; off < bytes; off += page) {
    const uint64_t v = va + off;
    auto t = table(fmt::PD.index(v), ps, false);
    if (!t) return std::unexpected(t.error());
    if (!*t) continue;
    mem_.write64(*t + level.index(v) * level.entry_bytes, 0);
    ++ptes_written_;
  }
  return {};
}

Status Vmm::flush(Port& port, uint64_t timeout_ns) {
  if (auto ok = bar_flush(port, timeout_ns); !ok) return std::unexpected(ok.error().context(name_));
  if (auto ok = tlb_invalidate(port, pd_, bar_, timeout_ns); !ok) return std::unexpected(ok.error().context(name_));
  return {};
}

void Vmm::join(uint64_t inst_addr) {
  fmt::encode_address_space(fmt::AddressSpace{.pdb = pd_, .limit = limit()}, mem_.writer(inst_addr));
}

std::optional<uint64_t> Vmm::pte(uint64_t va, fmt::PageSize ps) {
  if (va >= size_) return std::nullopt;
  auto t = table(fmt::PD.index(va), ps, false);
  if (!t || !*t) return std::nullopt;
  const fmt::Level& level = fmt::table_level(ps);
  return mem_.read64(*t + level.index(va) * level.entry_bytes);
}

}  // namespace vgpu::driver
