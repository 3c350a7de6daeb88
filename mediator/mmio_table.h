// SPDX-License-Identifier: GPL-2.0-or-later
// Trapped MMIO through tables: one record per register or register array,
// with its access class and its read and write handlers. A vGPU's BAR0
// trap path looks the offset up here and nowhere else.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "vgpu/bits.h"

namespace vgpu::mediator {

enum class Access : uint8_t {
  virtualized,       // per-VM state kept by the mediator
  physical_read,     // safe to read from the physical GPU (identity, timer)
  sensitive,         // validated, then reflected into the physical GPU or the shadows
  unimplemented,     // logged as a guest error; reads give the documented value
};

const char* access_name(Access a);

template <typename Owner>
struct MmioRecord {
  using ReadFn = uint32_t (*)(Owner&, uint32_t index);
  using WriteFn = void (*)(Owner&, uint32_t index, uint32_t value);

  const char* name;
  RegArray32 range;    // a single register is an array of one
  Access access;
  ReadFn read;         // nullptr: write-only, reads give 0
  WriteFn write;       // nullptr: read-only, writes are ignored (and logged)
};

template <typename Owner>
constexpr MmioRecord<Owner> reg(const char* name, Reg32 r, Access a, typename MmioRecord<Owner>::ReadFn rd,
                                typename MmioRecord<Owner>::WriteFn wr) {
  return MmioRecord<Owner>{name, RegArray32{r.offset, 4, 1}, a, rd, wr};
}

template <typename Owner>
class MmioTable {
 public:
  using Record = MmioRecord<Owner>;
  struct Hit {
    const Record* record;
    uint32_t index;
  };

  // Every register of every record is entered in a flat map: arrays may
  // interleave (CHAN_INST at 0x3000 + 8n, CHAN_STATE at 0x3004 + 8n).
  explicit MmioTable(std::vector<Record> records) : records_(std::move(records)) {
    for (size_t r = 0; r < records_.size(); ++r)
      for (uint32_t i = 0; i < records_[r].range.count; ++i)
        by_offset_.emplace(records_[r].range[i].offset, Slot{static_cast<uint32_t>(r), i});
  }

  // The record covering `offset`, or none.
  Hit find(uint32_t offset) const {
    auto it = by_offset_.find(offset);
    if (it == by_offset_.end()) return {nullptr, 0};
    return {&records_[it->second.record], it->second.index};
  }

  std::span<const Record> records() const { return records_; }

 private:
  struct Slot {
    uint32_t record;
    uint32_t index;
  };
  std::vector<Record> records_;
  std::unordered_map<uint32_t, Slot> by_offset_;
};

}  // namespace vgpu::mediator
