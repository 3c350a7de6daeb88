// SPDX-License-Identifier: GPL-2.0-or-later
// The paravirtual back end of the driver's page tables (spec §17): the
// same PageTables as driver/vmm.h, but no table is written in VRAM. A new
// address space is one create_space + set_pd batch (the directory address
// is only a name: the instance blocks carry it, the vGPU maps it to its
// shadow); map and unmap append one operation per contiguous range to
// the current batch; flush appends a flush and rings the doorbell.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "driver/vmm.h"
#include "pv-driver/hypercalls.h"

namespace vgpu::pvdriver {

class PvPageTables final : public driver::PageTables {
 public:
  // `space`: an id from Hypercalls::alloc_space (freed on destruction), or
  // SPACE_BAR1/SPACE_BAR3. The directory's name comes from `tables`.
  [[nodiscard]] static Result<std::unique_ptr<PvPageTables>> create(std::string name, Hypercalls& hc,
                                                                    driver::InstMem& mem, driver::TableMemory& tables,
                                                                    uint64_t size, uint32_t space);
  ~PvPageTables() override;

  [[nodiscard]] Status map(uint64_t va, uint64_t phys, uint64_t bytes, fmt::PageSize ps,
                           fmt::pte::Flags flags = {}) override;
  [[nodiscard]] Status unmap(uint64_t va, uint64_t bytes, fmt::PageSize ps) override;
  [[nodiscard]] Status flush(driver::Port& port, uint64_t timeout_ns = driver::PORT_REGISTER_WAIT) override;
  [[nodiscard]] Status commit() override { return hc_.submit(); }
  void join(uint64_t inst_addr) override;
  std::optional<uint64_t> pte(uint64_t va, fmt::PageSize ps) override;

  uint64_t pd_addr() const override { return pd_; }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  uint64_t ptes_written() const override { return 0; }  // the vGPU writes them
  uint32_t space() const { return space_; }

 private:
  PvPageTables(std::string name, Hypercalls& hc, driver::InstMem& mem, driver::TableMemory& tables, uint64_t size,
               uint32_t space)
      : name_(std::move(name)), hc_(hc), mem_(mem), tables_(tables), size_(size), space_(space) {}
  [[nodiscard]] Status check(uint64_t va, uint64_t bytes, fmt::PageSize ps, const char* what) const;

  struct Run {  // one map call, for pte()
    uint64_t bytes;
    uint64_t phys;
    fmt::PageSize ps;
    fmt::pte::Flags flags;
  };
  std::string name_;
  Hypercalls& hc_;
  driver::InstMem& mem_;
  driver::TableMemory& tables_;
  uint64_t size_;
  uint32_t space_;
  uint64_t pd_ = 0;
  std::map<uint64_t, Run> runs_;  // by VA
};

// The driver's paravirtual back end (driver::DeviceOptions::paravirtual):
// opens the interface with its slot area at `area` and makes a
// PvPageTables for each new address space (an id of its own for a
// channel's, the fixed ids for BAR1 and BAR3).
[[nodiscard]] Result<std::unique_ptr<driver::PvTables>> open_pv_tables(driver::Port& port, driver::InstMem& mem,
                                                                       driver::TableMemory& tables, uint64_t area);

}  // namespace vgpu::pvdriver
