// SPDX-License-Identifier: GPL-2.0-or-later
// A GPU address space (nouveau's "vmm"): a Fermi page directory with
// small-page (4 KiB) and big-page (128 KiB) tables created on demand,
// written through instance memory. Channels and the BAR1/BAR3 apertures
// each have one. Geometry comes from fmt::PD/SPT/LPT.
#pragma once

#include <cstdint>
#include <functional>
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

// What the address-space layer (driver/address_space.h), the BARs and the
// channels need of a GPU address space's page tables. Two back ends:
// Vmm below writes Fermi page tables in VRAM (native, and full
// virtualization); pv-driver/'s PvPageTables (through PvTables below) hands the same updates to the
// vGPU's paravirtual interface in batches (spec §17).
class PageTables {
 public:
  virtual ~PageTables() = default;
  // Maps [va, va + bytes) to VRAM [phys, phys + bytes) with pages of `ps`;
  // va, phys and bytes are multiples of the page size.
  [[nodiscard]] virtual Status map(uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize ps,
                                   fmt::pte::Flags flags = {}) = 0;
  // Clears the PTEs of [va, va + bytes).
  [[nodiscard]] virtual Status unmap(uint64_t va, uint64_t bytes, fmt::PageSize ps) = 0;
  // Makes every earlier map/unmap visible and drops stale TLB entries.
  // Call after a batch of map/unmap.
  [[nodiscard]] virtual Status flush(Port& port, uint64_t timeout_ns = PORT_REGISTER_WAIT) = 0;
  // Makes every earlier map/unmap reach the device before the next
  // register write, without a TLB invalidate (BAR bring-up).
  [[nodiscard]] virtual Status commit() { return {}; }
  // Writes the page directory base and limit into an instance block.
  virtual void join(uint64_t inst_addr) = 0;
  // The PTE mapping va with pages of ps, as the driver set it (tests, debugging).
  virtual std::optional<uint64_t> pte(uint64_t va, fmt::PageSize ps) = 0;
  virtual uint64_t pd_addr() const = 0;
  virtual uint64_t size() const = 0;
  uint64_t limit() const { return size() - 1; }
  virtual const std::string& name() const = 0;
  virtual uint64_t ptes_written() const = 0;
};

// Which address space a new set of page tables is for.
enum class SpaceKind : uint8_t { channel, bar1, bar3 };
// Makes the page tables of a new address space (the Device picks the back end).
using TablesMaker = std::function<Result<std::unique_ptr<PageTables>>(std::string name, uint64_t size, SpaceKind kind)>;

// The paravirtual interface's counts (spec §17).
struct HypercallStats {
  uint64_t batches = 0;  // doorbells rung
  uint64_t ops = 0;
};

// A back end that hands page-table updates to the vGPU (spec §17) instead
// of writing tables in VRAM. pv-driver/ implements it (pvdriver::open_pv_tables);
// the driver knows only this interface, so pv-driver/ depends on driver/
// and not the other way.
class PvTables {
 public:
  virtual ~PvTables() = default;
  [[nodiscard]] virtual Result<std::unique_ptr<PageTables>> make(std::string name, uint64_t size, SpaceKind kind) = 0;
  virtual const HypercallStats& stats() const = 0;
};
// Opens the paravirtual interface with its slot area at `area` (guest
// VRAM the device allocated in its instance heap).
using OpenPvTables = Result<std::unique_ptr<PvTables>> (*)(Port& port, InstMem& mem, TableMemory& tables,
                                                           uint64_t area);

class Vmm final : public PageTables {
 public:
  // An address space of `size` bytes of VA (its limit is size - 1). BAR
  // address spaces flush with HUB_ONLY.
  [[nodiscard]] static Result<std::unique_ptr<Vmm>> create(std::string name, InstMem& mem, TableMemory& tables,
                                                           uint64_t size, bool bar);
  ~Vmm() override;
  Vmm(const Vmm&) = delete;
  Vmm& operator=(const Vmm&) = delete;

  [[nodiscard]] Status map(uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize ps,
                           fmt::pte::Flags flags = {}) override;
  [[nodiscard]] Status unmap(uint64_t va, uint64_t bytes, fmt::PageSize ps) override;
  // BAR flush, then TLB invalidate of this page directory.
  [[nodiscard]] Status flush(Port& port, uint64_t timeout_ns = PORT_REGISTER_WAIT) override;
  void join(uint64_t inst_addr) override;
  std::optional<uint64_t> pte(uint64_t va, fmt::PageSize ps) override;

  uint64_t pd_addr() const override { return pd_; }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  uint64_t ptes_written() const override { return ptes_written_; }

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
