// SPDX-License-Identifier: GPL-2.0-or-later
#include "shadow/entry.h"

namespace vgpu::shadow {
namespace {

GuestTable guest_table(uint64_t target, uint64_t addr, const fmt::Level& level, const Partition& partition) {
  if (target == uint64_t(fmt::PdeTarget::none)) return {0, Verdict::absent};
  if (target != uint64_t(fmt::PdeTarget::vram)) return {0, Verdict::rejected};
  if (!partition.contains(addr, level.table_bytes())) return {0, Verdict::rejected};
  return {addr, Verdict::mapped};
}

}  // namespace

std::optional<uint64_t> confine_sysmem_page(uint64_t gpa, uint64_t bytes, const GuestRam* ram) {
  if (!ram || gpa % bytes != 0) return std::nullopt;
  return ram->host(gpa, bytes);
}

TargetPage check_target(fmt::Target target, uint64_t gaddr, uint64_t page, const Partition& partition,
                        const GuestRam* ram) {
  if (fmt::pte::in_sysmem(target)) {
    const auto bus = confine_sysmem_page(gaddr, page, ram);
    // The shadow's address field holds 40 bits: a host bus address beyond
    // them cannot be named, so the entry faults.
    if (!bus || *bus >= fmt::VA_LIMIT) return {0, Verdict::rejected};
    return {*bus, Verdict::mapped};
  }
  if (target != fmt::Target::vram) return {0, Verdict::rejected};
  if (gaddr % page != 0 || !partition.contains(gaddr, page)) return {0, Verdict::rejected};
  return {partition.host(gaddr), Verdict::mapped};
}

ShadowPte shadow_pte(uint64_t guest_pte, fmt::PageSize size, const Partition& partition, const GuestRam* ram) {
  if (!fmt::pte::Valid::get(guest_pte)) return {0, Verdict::absent};
  const auto target = static_cast<fmt::Target>(fmt::pte::Aperture::get(guest_pte));
  const TargetPage t = check_target(target, fmt::pte::addr(guest_pte), fmt::page_bytes(size), partition, ram);
  if (t.verdict != Verdict::mapped) return {0, t.verdict};
  return {fmt::pte::Addr::set(guest_pte, t.host >> fmt::pte::ADDR_SHIFT), Verdict::mapped};
}

GuestTable guest_spt(uint64_t pde, const Partition& partition) {
  return guest_table(fmt::pde::SptTarget::get(pde), fmt::pde::spt_addr(pde), fmt::SPT, partition);
}

GuestTable guest_lpt(uint64_t pde, const Partition& partition) {
  return guest_table(fmt::pde::LptTarget::get(pde), fmt::pde::lpt_addr(pde), fmt::LPT, partition);
}

}  // namespace vgpu::shadow
