// SPDX-License-Identifier: GPL-2.0-or-later
// The one register-table engine: the GPU model's BAR0 and each vGPU's
// virtual BAR0 are tables of rows, one row per register or register
// array. A row declares its behaviour as data; a handler is written only
// where behaviour is special (as GVT-g's MMIO_DFH table, where a row with
// no handler is a plain virtual register):
//
//   plain        a stored word; a write replaces the writable bits
//   constant     a read-only value
//   rw1c         a stored word; writing a 1 clears that bit
//   read_only    a computed value (derived state, the physical GPU's);
//                writes are a guest error
//   write_only   a write handler (a trigger); reads give 0
//   sensitive    read (computed or stored) and write handler: validated,
//                with side effects
//
// A write to a row without write behaviour, and any access to an offset no
// row covers, is a guest error (reads of the latter give BAD_REGISTER). A
// row may be gated by a unit that PMC.ENABLE holds in reset: while the gate
// is closed, reads give BAD_DISABLED_UNIT and writes are dropped.
//
// Not thread-safe: callers serialize accesses (the model's lock, a vGPU's).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "vgpu/bits.h"

namespace vgpu {

enum class RegKind : uint8_t { plain, constant, rw1c, read_only, write_only, sensitive };
const char* reg_kind_name(RegKind kind);

// The unit a register belongs to, for PMC.ENABLE gating.
enum class Gate : uint8_t { none, pfifo, ptimer };

struct RegRow {
  using Read = std::function<uint32_t(uint32_t index)>;
  using Write = std::function<void(uint32_t index, uint32_t value)>;

  const char* name;
  RegArray32 range;  // a single register is an array of one
  RegKind kind;
  Gate gate = Gate::none;
  uint32_t* storage = nullptr;  // plain, rw1c (and sensitive rows that read it): word i at storage[i]
  uint32_t mask = ~0u;          // plain: the writable bits; rw1c: the clearable bits
  uint32_t value = 0;           // constant
  Read read;                    // read_only, sensitive (unless storage)
  Write write;                  // write_only, sensitive
  std::function<void()> after;  // plain, rw1c: after a write (re-evaluate an interrupt line, ...)

  RegRow gated(Gate g) && {
    gate = g;
    return std::move(*this);
  }
  RegRow then(std::function<void()> fn) && {
    after = std::move(fn);
    return std::move(*this);
  }
};

// Rows by kind. Storage is referenced, not copied: it must outlive the table.
RegRow plain(const char* name, Reg32 reg, uint32_t& storage, uint32_t writable = ~0u);
RegRow plain(const char* name, RegArray32 arr, uint32_t* storage, uint32_t writable = ~0u);
RegRow constant(const char* name, Reg32 reg, uint32_t value);
RegRow constant(const char* name, RegArray32 arr, uint32_t value);
RegRow rw1c(const char* name, Reg32 reg, uint32_t& storage, uint32_t clearable = ~0u);
RegRow rw1c(const char* name, RegArray32 arr, uint32_t* storage, uint32_t clearable = ~0u);
RegRow read_only(const char* name, Reg32 reg, RegRow::Read read);
RegRow read_only(const char* name, RegArray32 arr, RegRow::Read read);
RegRow write_only(const char* name, Reg32 reg, RegRow::Write write);
RegRow sensitive(const char* name, Reg32 reg, RegRow::Read read, RegRow::Write write);
RegRow sensitive(const char* name, RegArray32 arr, RegRow::Read read, RegRow::Write write);
// A sensitive row whose reads give the stored word (the write handler keeps it).
RegRow sensitive(const char* name, Reg32 reg, uint32_t& storage, RegRow::Write write);

struct RegStats {
  uint64_t bad_reads = 0;  // no row
  uint64_t bad_writes = 0;
  uint64_t ro_writes = 0;       // write to a row without write behaviour
  uint64_t disabled_reads = 0;  // gate closed
  uint64_t disabled_writes = 0;
  uint64_t sensitive_writes = 0;  // writes that ran a sensitive handler
};

class RegisterTable {
 public:
  // Guest errors (a bad offset, a write to a read-only register) go here.
  explicit RegisterTable(std::function<void(const std::string&)> guest_error = nullptr);

  // A row overlapping an earlier one, or covering no register, is refused
  // (a bug in whoever builds the table).
  [[nodiscard]] Status add(RegRow row);
  // Whether a gated unit is out of reset.
  void set_gate(std::function<bool(Gate)> open) { gate_open_ = std::move(open); }

  uint32_t read(uint32_t offset);
  void write(uint32_t offset, uint32_t value);

  const RegRow* find(uint32_t offset) const;
  const RegStats& stats() const { return stats_; }
  size_t size() const { return rows_.size(); }

 private:
  bool open(Gate g) const { return g == Gate::none || !gate_open_ || gate_open_(g); }
  void guest_error(const std::string& line) const {
    if (guest_error_) guest_error_(line);
  }

  std::function<void(const std::string&)> guest_error_;
  std::function<bool(Gate)> gate_open_;
  std::vector<RegRow> rows_;
  // Offsets of small rows; large dense windows (PRAMIN) searched apart.
  // Arrays may interleave (CHAN_INST at 0x3000 + 8n, CHAN_STATE at 0x3004 + 8n).
  std::unordered_map<uint32_t, uint32_t> exact_;
  std::vector<uint32_t> windows_;
  RegStats stats_;
};

}  // namespace vgpu
