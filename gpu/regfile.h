// SPDX-License-Identifier: GPL-2.0-or-later
// The BAR0 register file of the GPU model as a table: one record per
// register or register array, with its access rule, the unit that
// PMC.ENABLE gates and its read and write handlers. The units (pmc.cc,
// pbus.cc, ptimer.cc, fb.cc, pfifo_regs.cc) each add their records.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "vgpu/bits.h"

namespace vgpu::gpu {

enum class Access : uint8_t {
  ro,    // writes are ignored (counted)
  rw,
  wo,    // reads give 0
  rw1c,  // the write handler gets the bits to clear
};

// The unit a register belongs to, for PMC.ENABLE gating.
enum class Gate : uint8_t { none, pfifo, ptimer };

struct RegRecord {
  const char* name;
  RegArray32 range;                                       // one register: count 1
  Access access;
  Gate gate;
  std::function<uint32_t(uint32_t index)> read;           // unused for wo
  std::function<void(uint32_t index, uint32_t value)> write;  // unused for ro
};

constexpr RegArray32 single(Reg32 r) { return RegArray32{r.offset, 4, 1}; }

// Helpers for the common records: plain storage.
RegRecord stored_rw(const char* name, Reg32 reg, Gate gate, uint32_t& storage, uint32_t writable = ~0u);
RegRecord stored_rw1c(const char* name, Reg32 reg, Gate gate, uint32_t& storage);
RegRecord constant_ro(const char* name, Reg32 reg, Gate gate, uint32_t value);

struct RegStats {
  uint64_t bad_reads = 0;        // unknown offset
  uint64_t bad_writes = 0;
  uint64_t ro_writes = 0;        // write to a read-only register, ignored
  uint64_t disabled_reads = 0;   // unit held in reset
  uint64_t disabled_writes = 0;
  uint64_t conflicts = 0;        // records that overlapped an earlier one (a model bug)
};

// Not thread-safe: the model calls it under its lock.
class RegisterFile {
 public:
  void add(RegRecord record);
  // Whether a gated unit is out of reset.
  void set_gate(std::function<bool(Gate)> enabled) { enabled_ = std::move(enabled); }

  uint32_t read(uint32_t offset);
  void write(uint32_t offset, uint32_t value);

  const RegRecord* find(uint32_t offset) const;
  const RegStats& stats() const { return stats_; }
  size_t size() const { return records_.size(); }

 private:
  bool gate_open(Gate g) const { return g == Gate::none || !enabled_ || enabled_(g); }

  std::vector<RegRecord> records_;
  // Offsets of small records, and large dense windows (PRAMIN) searched apart.
  std::unordered_map<uint32_t, uint32_t> exact_;
  std::vector<uint32_t> windows_;
  std::function<bool(Gate)> enabled_;
  RegStats stats_;
};

}  // namespace vgpu::gpu
