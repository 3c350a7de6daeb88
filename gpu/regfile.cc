// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/regfile.h"

#include <cstdio>

#include "vgpu/regs.h"

namespace vgpu::gpu {
namespace {
// Records with more entries than this are searched as windows, not hashed.
constexpr uint32_t MAX_HASHED_ENTRIES = 1024;
// Guest mistakes are logged this many times, then only counted.
constexpr uint64_t LOG_LIMIT = 16;

void log_guest_error(uint64_t count, const char* what, uint32_t offset) {
  if (count <= LOG_LIMIT) std::fprintf(stderr, "vgpu: %s at BAR0 0x%06x\n", what, offset);
}
}  // namespace

RegRecord stored_rw(const char* name, Reg32 reg, Gate gate, uint32_t& storage, uint32_t writable) {
  return RegRecord{name, single(reg), Access::rw, gate, [&storage](uint32_t) { return storage; },
                   [&storage, writable](uint32_t, uint32_t v) { storage = (storage & ~writable) | (v & writable); }};
}

RegRecord stored_rw1c(const char* name, Reg32 reg, Gate gate, uint32_t& storage) {
  return RegRecord{name, single(reg), Access::rw1c, gate, [&storage](uint32_t) { return storage; },
                   [&storage](uint32_t, uint32_t v) { storage &= ~v; }};
}

RegRecord constant_ro(const char* name, Reg32 reg, Gate gate, uint32_t value) {
  return RegRecord{name, single(reg), Access::ro, gate, [value](uint32_t) { return value; }, nullptr};
}

void RegisterFile::add(RegRecord record) {
  const auto index = static_cast<uint32_t>(records_.size());
  const RegArray32 r = record.range;
  bool clash = false;
  for (uint32_t i = 0; i < r.count && r.count <= MAX_HASHED_ENTRIES; ++i)
    clash |= find(r[i].offset) != nullptr;
  if (r.count > MAX_HASHED_ENTRIES) clash = find(r.base) != nullptr;
  if (clash) {
    ++stats_.conflicts;
    std::fprintf(stderr, "vgpu: register record %s overlaps another\n", record.name);
    return;
  }
  records_.push_back(std::move(record));
  if (r.count > MAX_HASHED_ENTRIES) {
    windows_.push_back(index);
    return;
  }
  for (uint32_t i = 0; i < r.count; ++i) exact_.emplace(r[i].offset, index);
}

const RegRecord* RegisterFile::find(uint32_t offset) const {
  if (auto it = exact_.find(offset); it != exact_.end()) return &records_[it->second];
  for (uint32_t w : windows_)
    if (records_[w].range.contains(offset)) return &records_[w];
  return nullptr;
}

uint32_t RegisterFile::read(uint32_t offset) {
  const RegRecord* r = find(offset);
  if (!r) {
    log_guest_error(++stats_.bad_reads, "read of an unimplemented register", offset);
    return regs::BAD_REGISTER;
  }
  if (!gate_open(r->gate)) {
    ++stats_.disabled_reads;
    return regs::BAD_DISABLED_UNIT;
  }
  if (r->access == Access::wo || !r->read) return 0;
  return r->read(r->range.index_of(offset));
}

void RegisterFile::write(uint32_t offset, uint32_t value) {
  const RegRecord* r = find(offset);
  if (!r) {
    log_guest_error(++stats_.bad_writes, "write of an unimplemented register", offset);
    return;
  }
  if (!gate_open(r->gate)) {
    ++stats_.disabled_writes;
    return;
  }
  if (r->access == Access::ro || !r->write) {
    log_guest_error(++stats_.ro_writes, "write of a read-only register", offset);
    return;
  }
  r->write(r->range.index_of(offset), value);
}

}  // namespace vgpu::gpu
