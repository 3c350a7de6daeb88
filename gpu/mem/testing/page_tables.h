// SPDX-License-Identifier: GPL-2.0-or-later
// The fixture the MMU and page-table tests start from (mmu_test.cc,
// mmu_sysmem_test.cc, page_table_builder_test.cc): VRAM, a page-table
// builder over a range of it, and one page directory.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "gpu/mem/mmu.h"
#include "gpu/mem/page_table_builder.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu::testing {

class PageTablesTest : public ::testing::Test {
 protected:
  static constexpr uint64_t SMALL = fmt::SMALL_PAGE;
  static constexpr uint64_t BIG = fmt::BIG_PAGE;

  // `vram_bytes` of VRAM, page tables in [tables, tables_end), and pd.
  void make_tables(uint64_t vram_bytes, uint64_t tables, uint64_t tables_end) {
    auto v = Vram::create(vram_bytes);
    ASSERT_TRUE(v.has_value());
    vram = std::move(*v);
    builder = std::make_unique<PageTableBuilder>(*vram, tables, tables_end);
    auto p = builder->create_pd();
    ASSERT_TRUE(p.has_value());
    pd = *p;
  }

  // A copy engine's access through pd, over the whole VA space.
  AccessContext ce_access() const {
    AccessContext c;
    c.pdb = pd;
    c.limit = fmt::VA_LIMIT - 1;
    c.unit = regs::FaultUnit::ce0;
    return c;
  }

  // A walk's fault reason, none when it did not fault.
  template <typename T>
  static std::optional<regs::FaultReason> reason(const Walk<T>& w) {
    if (w) return std::nullopt;
    return w.error().reason;
  }

  std::unique_ptr<Vram> vram;
  std::unique_ptr<PageTableBuilder> builder;
  uint64_t pd = 0;
};

}  // namespace vgpu::gpu::testing
