// SPDX-License-Identifier: GPL-2.0-or-later
// A GPU address space (nouveau's "vmm"): a Fermi page directory with
// small-page (4 KiB) and big-page (128 KiB) tables created on demand,
// written through instance memory. Channels and the BAR1/BAR3 apertures
// each have one. Geometry comes from fmt::PD/SPT/LPT.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "driver/allocator.h"
#include "driver/instmem.h"
#include "driver/poll.h"
#include "vgpu/formats.h"

namespace vgpu::driver {

// Where page directories and tables come from: the instance heap (which
// BAR3 maps, so writes are fast), else the rest of VRAM (written through
// PRAMIN).
class TableMemory {
 public:
  TableMemory(RangeAllocator& heap, RangeAllocator* fallback) : heap_(heap), fallback_(fallback) {}
  [[nodiscard]] Result<uint64_t> alloc(uint64_t bytes);
  void free(uint64_t addr);

 private:
  RangeAllocator& heap_;
  RangeAllocator* fallback_;
};

class Vmm {
 public:
  // An address space of `size` bytes of VA (its limit is size - 1). BAR
  // address spaces flush with HUB_ONLY.
  [[nodiscard]] static Result<std::unique_ptr<Vmm>> create(std::string name, InstMem& mem, TableMemory& tables,
                                                           uint64_t size, bool bar);
  ~Vmm();
  Vmm(const Vmm&) = delete;
  Vmm& operator=(const Vmm&) = delete;

  // Maps [va, va + bytes) to VRAM [phys, phys + bytes) with pages of `ps`;
  // va, phys and bytes are multiples of the page size.
  [[nodiscard]] Status map(uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize ps, fmt::pte::Flags flags = {});
  // Clears the PTEs of [va, va + bytes).
  [[nodiscard]] Status unmap(uint64_t va, uint64_t bytes, fmt::PageSize ps);
  // BAR flush, then TLB invalidate of this page directory. Call after a
  // batch of map/unmap.
  [[nodiscard]] Status flush(Port& port, uint64_t timeout_ns = DEFAULT_POLL_TIMEOUT_NS);

  // Writes the page directory base and limit into an instance block.
  void join(uint64_t inst_addr);

  // The PTE mapping va with pages of ps, as written (tests, debugging).
  std::optional<uint64_t> pte(uint64_t va, fmt::PageSize ps);

  uint64_t pd_addr() const { return pd_; }
  uint64_t size() const { return size_; }
  uint64_t limit() const { return size_ - 1; }
  const std::string& name() const { return name_; }
  uint64_t ptes_written() const { return ptes_written_; }

 private:
  struct Pde {
    uint64_t spt = 0;
    uint64_t lpt = 0;
  };
  Vmm(std::string name, InstMem& mem, TableMemory& tables, uint64_t size, bool bar)
      : name_(std::move(name)), mem_(mem), tables_(tables), size_(size), bar_(bar) {}
  [[nodiscard]] Result<uint64_t> table(uint64_t pde_index, fmt::PageSize ps, bool create);
  [[nodiscard]] Status check(uint64_t va, uint64_t bytes, fmt::PageSize ps, const char* what) const;
  uint64_t entries_in_range(uint64_t pde_index, const fmt::Level& level) const;

  std::string name_;
  InstMem& mem_;
  TableMemory& tables_;
  uint64_t size_;
  bool bar_;
  uint64_t pd_ = 0;
  std::vector<Pde> pdes_;
  uint64_t ptes_written_ = 0;
};

}  // namespace vgpu::driver
