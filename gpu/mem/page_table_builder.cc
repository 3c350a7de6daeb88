// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/page_table_builder.h"

#include <array>
#include <optional>

#include "common/text.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {
namespace {

using fmt::PageSize;
using fmt::PdeTarget;

constexpr uint64_t VRAM_PDE = static_cast<uint64_t>(PdeTarget::vram);

// The half of a PDE that points to the table of one page size.
struct PdeHalf {
  const fmt::Level* level;
  bool (*present)(uint64_t pde);
  uint64_t (*table)(uint64_t pde);
  uint64_t (*with_table)(uint64_t pde, uint64_t addr);
};

// Indexed by PageSize.
constexpr std::array<PdeHalf, 2> PDE_HALF{{
    {&fmt::SPT, [](uint64_t p) { return fmt::pde::SptTarget::get(p) == VRAM_PDE; }, fmt::pde::spt_addr,
     [](uint64_t p, uint64_t a) {
       return fmt::pde::SptAddr::set(fmt::pde::SptTarget::set(p, VRAM_PDE), a >> fmt::TABLE_ALIGN_SHIFT);
     }},
    {&fmt::LPT, [](uint64_t p) { return fmt::pde::LptTarget::get(p) == VRAM_PDE; }, fmt::pde::lpt_addr,
     [](uint64_t p, uint64_t a) {
       return fmt::pde::LptAddr::set(fmt::pde::LptTarget::set(p, VRAM_PDE), a >> fmt::TABLE_ALIGN_SHIFT);
     }},
}};
static_assert(static_cast<size_t>(PageSize::small) == 0 && static_cast<size_t>(PageSize::big) == 1);

const PdeHalf& half(PageSize s) { return PDE_HALF[static_cast<size_t>(s)]; }

// Largest physical address a PTE (or PDE table field) can name.
constexpr uint64_t PTE_ADDR_END = (uint64_t{fmt::pte::Addr::max} + 1) << fmt::pte::ADDR_SHIFT;

}  // namespace

PageTableBuilder::PageTableBuilder(Vram& vram, uint64_t base, uint64_t end)
    : vram_(vram), next_(align_up(base, fmt::TABLE_ALIGN)), end_(end) {}

Result<uint64_t> PageTableBuilder::allocate(uint64_t bytes, uint64_t align) {
  if (!is_pow2(align))
    return fail(Errc::invalid_argument, "page tables: alignment " + hex(align) + " is not a power of 2");
  uint64_t at = align_up(next_, align);
  if (at < next_ || at > end_ || bytes > end_ - at || !vram_.contains(at, bytes))
    return fail(Errc::out_of_memory, "page tables: no room for " + hex(bytes) + " bytes at " + hex(at) +
                                         " (region ends at " + hex(end_) + ")");
  if (!vram_.fill(at, std::byte{0}, bytes))
    return fail(Errc::out_of_memory, "page tables: " + hex(at) + " outside VRAM");
  next_ = at + bytes;
  return at;
}

Result<uint64_t> PageTableBuilder::create_pd() { return allocate(fmt::PD.table_bytes(), fmt::TABLE_ALIGN); }

Status PageTableBuilder::check_pd(uint64_t pd) const {
  if (pd % fmt::TABLE_ALIGN != 0 || !vram_.contains(pd, fmt::PD.table_bytes()))
    return fail(Errc::invalid_argument, "page directory " + hex(pd) + " is misaligned or outside VRAM");
  return {};
}

Status PageTableBuilder::check_range(uint64_t va, uint64_t bytes, PageSize size) const {
  const uint64_t page = fmt::page_bytes(size);
  if (bytes == 0 || va % page != 0 || bytes % page != 0)
    return fail(Errc::invalid_argument,
                "va " + hex(va) + " + " + hex(bytes) + " is not page aligned (" + hex(page) + ")");
  if (va >= fmt::VA_LIMIT || bytes > fmt::VA_LIMIT - va)
    return fail(Errc::invalid_argument, "va " + hex(va) + " + " + hex(bytes) + " beyond the 40-bit address space");
  return {};
}

Result<uint64_t> PageTableBuilder::pte_addr(uint64_t pd, uint64_t va, PageSize size, bool create) {
  const PdeHalf& h = half(size);
  const uint64_t pde_addr = pd + fmt::PD.index(va) * fmt::PD.entry_bytes;
  uint64_t pde = vram_.read64(pde_addr);
  if (!h.present(pde)) {
    if (!create) return fail(Errc::not_found, "no " + std::string(h.level->name) + " for va " + hex(va));
    auto table = allocate(h.level->table_bytes(), fmt::TABLE_ALIGN);
    if (!table) return std::unexpected(table.error());
    pde = h.with_table(pde, *table);
    vram_.write64(pde_addr, pde);
  }
  return h.table(pde) + h.level->index(va) * h.level->entry_bytes;
}

Status PageTableBuilder::set_pte(uint64_t pd, uint64_t va, PageSize size, uint64_t raw) {
  if (auto ok = check_pd(pd); !ok) return ok;
  if (auto ok = check_range(va, fmt::page_bytes(size), size); !ok) return ok;
  auto at = pte_addr(pd, va, size, true);
  if (!at) return std::unexpected(at.error());
  if (!vram_.write64(*at, raw)) return fail(Errc::invalid_argument, "page table entry " + hex(*at) + " outside VRAM");
  return {};
}

Status PageTableBuilder::map(uint64_t pd, uint64_t va, uint64_t phys, uint64_t bytes, PageSize size,
                             fmt::pte::Flags flags) {
  if (auto ok = check_pd(pd); !ok) return ok;
  if (auto ok = check_range(va, bytes, size); !ok) return ok;
  const uint64_t page = fmt::page_bytes(size);
  if (phys % page != 0 || phys >= PTE_ADDR_END || bytes > PTE_ADDR_END - phys)
    return fail(Errc::invalid_argument,
                "physical " + hex(phys) + " + " + hex(bytes) + " misaligned or not addressable");
  if (!fmt::pte::Kind::fits(flags.kind)) return fail(Errc::invalid_argument, "kind " + hex(flags.kind) + " too wide");
  for (uint64_t off = 0; off < bytes; off += page) {
    if (auto ok = set_pte(pd, va + off, size, fmt::pte::make(phys + off, flags)); !ok)
      return std::unexpected(ok.error().context("map va " + hex(va + off)));
  }
  return {};
}

Status PageTableBuilder::unmap(uint64_t pd, uint64_t va, uint64_t bytes, PageSize size) {
  if (auto ok = check_pd(pd); !ok) return ok;
  if (auto ok = check_range(va, bytes, size); !ok) return ok;
  for (uint64_t off = 0; off < bytes; off += fmt::page_bytes(size)) {
    auto at = pte_addr(pd, va + off, size, false);
    if (!at) continue;  // no table: nothing mapped there
    vram_.write64(*at, 0);
  }
  return {};
}

Status PageTableBuilder::write_instance(uint64_t inst, uint64_t pd, uint64_t limit) {
  if (inst % regs::inst::ALIGN != 0 || !vram_.contains(inst, regs::inst::SIZE))
    return fail(Errc::invalid_argument, "instance block " + hex(inst) + " is misaligned or outside VRAM");
  if (pd % fmt::TABLE_ALIGN != 0 || pd >= fmt::VA_LIMIT)
    return fail(Errc::invalid_argument, "page directory " + hex(pd) + " cannot be named by an instance block");
  fmt::encode_address_space(fmt::AddressSpace{.pdb = pd, .limit = limit}, vram_.writer(inst));
  return {};
}

}  // namespace vgpu::gpu
