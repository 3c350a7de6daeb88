// SPDX-License-Identifier: GPL-2.0-or-later
// Builds Fermi page tables in VRAM, as a driver would: for tests of the
// MMU, the engines and PFIFO. Tables come from a bump allocator over a
// VRAM region [base, end); nothing is ever freed. Not thread-safe.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "gpu/mem/vram.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {

class PageTableBuilder {
 public:
  PageTableBuilder(Vram& vram, uint64_t base, uint64_t end);

  // Zeroed VRAM from the region (tables, or instance blocks for tests).
  [[nodiscard]] Result<uint64_t> allocate(uint64_t bytes, uint64_t align = fmt::TABLE_ALIGN);
  // A zeroed page directory (fmt::PD.table_bytes()).
  [[nodiscard]] Result<uint64_t> create_pd();

  // Map [va, va+bytes) to [phys, phys+bytes) with pages of one size,
  // allocating page tables as needed. va, phys and bytes are multiples of
  // the page size. phys is not checked against the VRAM size (tests build
  // faulting entries on purpose), only against the PTE address field.
  [[nodiscard]] Status map(uint64_t pd, uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize size,
                           fmt::pte::Flags flags = {});
  // Zero the PTEs of [va, va+bytes); tables stay. Does not touch any TLB.
  [[nodiscard]] Status unmap(uint64_t pd, uint64_t va, uint64_t bytes, fmt::PageSize size);
  // Write one raw PTE (for faulting or unusual entries), allocating its table.
  [[nodiscard]] Status set_pte(uint64_t pd, uint64_t va, fmt::PageSize size, uint64_t raw);

  // Point an instance block at a page directory: PDB (VRAM target) and
  // LIMIT (the last valid VA byte), regs::inst fields.
  [[nodiscard]] Status write_instance(uint64_t inst, uint64_t pd, uint64_t limit);

  uint64_t next_free() const { return next_; }
  uint64_t end() const { return end_; }

 private:
  [[nodiscard]] Status check_pd(uint64_t pd) const;
  [[nodiscard]] Status check_range(uint64_t va, uint64_t bytes, fmt::PageSize size) const;
  // VRAM address of the PTE for va; allocates the table if `create`.
  [[nodiscard]] Result<uint64_t> pte_addr(uint64_t pd, uint64_t va, fmt::PageSize size, bool create);

  Vram& vram_;
  uint64_t next_;
  uint64_t end_;
};

}  // namespace vgpu::gpu
