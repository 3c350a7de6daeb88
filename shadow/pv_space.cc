// SPDX-License-Identifier: GPL-2.0-or-later
// The paravirtual half of ShadowSpace (spec §17): shadow entries written
// straight from validated hypercall operations, with no guest table behind
// them. Validation is the PV server's (mediator/pv_server.cc); this file
// only owns the shadow tables' geometry.
#include <vector>

#include "common/text.h"
#include "shadow/entry.h"
#include "shadow/shadow_space.h"

namespace vgpu::shadow {

Result<std::unique_ptr<ShadowSpace>> ShadowSpace::create_pv(const GuestMemory& guest, ReservedVram& reserved,
                                                            ShadowCounters& counters) {
  auto pd = reserved.alloc(fmt::PD.table_bytes());
  if (!pd) return fail(Errc::out_of_memory, "no reserved VRAM for a paravirtual page directory");
  return std::unique_ptr<ShadowSpace>(new ShadowSpace(guest, reserved, counters, 0, *pd, true));
}

// With mutex_ held. The shadow table of one PDE and page size, made (and
// its PDE written) when `create`; 0 when absent and not created.
Result<uint64_t> ShadowSpace::pv_table(uint32_t pde, fmt::PageSize ps, bool create) {
  const bool big = ps == fmt::PageSize::big;
  auto it = slots_.find(pde);
  if (it != slots_.end()) {
    const uint64_t t = big ? it->second.shadow_lpt : it->second.shadow_spt;
    if (t || !create) return t;
  } else if (!create) {
    return uint64_t{0};
  }
  const fmt::Level& level = fmt::table_level(ps);
  auto table = reserved_.alloc(level.table_bytes());
  if (!table)
    return fail(Errc::out_of_memory, strfmt("no reserved VRAM for a paravirtual %s (PDE %u)", level.name, pde));
  Slot& slot = slots_[pde];
  (big ? slot.shadow_lpt : slot.shadow_spt) = *table;
  write_shadow(shadow_pd_ + uint64_t{pde} * fmt::PD.entry_bytes, shadow_pde(slot.shadow_spt, slot.shadow_lpt));
  return *table;
}

Status ShadowSpace::pv_write(uint64_t va, uint64_t count, fmt::PageSize ps,
                             const std::function<uint64_t(uint64_t)>& pte) {
  if (!pv_) return fail(Errc::invalid_argument, "not a paravirtual address space");
  std::lock_guard lock(mutex_);
  const uint64_t page = fmt::page_bytes(ps);
  const fmt::Level& level = fmt::table_level(ps);
  const uint64_t end = va + count * page;
  // Every table first, so that running out of reserved VRAM writes nothing.
  bool any_set = false;
  for (uint64_t i = 0; i < count && !any_set; ++i) any_set = pte(i) != 0;
  std::vector<uint64_t> tables;
  for (uint64_t pde_va = align_down(va, fmt::PDE_SPAN); pde_va < end; pde_va += fmt::PDE_SPAN) {
    auto t = pv_table(static_cast<uint32_t>(fmt::PD.index(pde_va)), ps, any_set);
    if (!t) return std::unexpected(t.error());
    tables.push_back(*t);
  }
  const uint64_t first_pde = fmt::PD.index(va);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t v = va + i * page;
    const uint64_t table = tables[fmt::PD.index(v) - first_pde];
    if (table) write_shadow(table + level.index(v) * level.entry_bytes, pte(i));
  }
  return {};
}

}  // namespace vgpu::shadow
