// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/reg_table.h"

#include "common/text.h"
#include "vgpu/regs.h"

namespace vgpu {
namespace {

// Rows with more registers than this are searched as windows, not hashed.
constexpr uint32_t MAX_HASHED_ENTRIES = 1024;

constexpr RegArray32 single(Reg32 r) { return RegArray32{r.offset, sizeof(uint32_t), 1}; }

RegRow row(const char* name, RegArray32 arr, RegKind kind) { return RegRow{.name = name, .range = arr, .kind = kind}; }

// plain and rw1c: a stored word per register, and the bits writes may touch.
RegRow stored(const char* name, RegArray32 arr, RegKind kind, uint32_t* storage, uint32_t mask) {
  RegRow r = row(name, arr, kind);
  r.storage = storage;
  r.mask = mask;
  return r;
}

}  // namespace

const char* reg_kind_name(RegKind kind) {
  switch (kind) {
    case RegKind::plain: return "plain";
    case RegKind::constant: return "constant";
    case RegKind::rw1c: return "rw1c";
    case RegKind::read_only: return "read-only";
    case RegKind::write_only: return "write-only";
    case RegKind::sensitive: return "sensitive";
  }
  return "?";
}

RegRow plain(const char* name, Reg32 reg, uint32_t& storage, uint32_t writable) {
  return plain(name, single(reg), &storage, writable);
}
RegRow plain(const char* name, RegArray32 arr, uint32_t* storage, uint32_t writable) {
  return stored(name, arr, RegKind::plain, storage, writable);
}
RegRow constant(const char* name, Reg32 reg, uint32_t value) { return constant(name, single(reg), value); }
RegRow constant(const char* name, RegArray32 arr, uint32_t value) {
  RegRow r = row(name, arr, RegKind::constant);
  r.value = value;
  return r;
}
RegRow rw1c(const char* name, Reg32 reg, uint32_t& storage, uint32_t clearable) {
  return rw1c(name, single(reg), &storage, clearable);
}
RegRow rw1c(const char* name, RegArray32 arr, uint32_t* storage, uint32_t clearable) {
  return stored(name, arr, RegKind::rw1c, storage, clearable);
}
RegRow read_only(const char* name, Reg32 reg, RegRow::Read read) {
  return read_only(name, single(reg), std::move(read));
}
RegRow read_only(const char* name, RegArray32 arr, RegRow::Read read) {
  RegRow r = row(name, arr, RegKind::read_only);
  r.read = std::move(read);
  return r;
}
RegRow write_only(const char* name, Reg32 reg, RegRow::Write write) {
  RegRow r = row(name, single(reg), RegKind::write_only);
  r.write = std::move(write);
  return r;
}
RegRow sensitive(const char* name, Reg32 reg, RegRow::Read read, RegRow::Write write) {
  return sensitive(name, single(reg), std::move(read), std::move(write));
}
RegRow sensitive(const char* name, RegArray32 arr, RegRow::Read read, RegRow::Write write) {
  RegRow r = row(name, arr, RegKind::sensitive);
  r.read = std::move(read);
  r.write = std::move(write);
  return r;
}
RegRow sensitive(const char* name, Reg32 reg, uint32_t& storage, RegRow::Write write) {
  RegRow r = row(name, single(reg), RegKind::sensitive);
  r.storage = &storage;
  r.write = std::move(write);
  return r;
}

RegisterTable::RegisterTable(std::function<void(const std::string&)> guest_error)
    : guest_error_(std::move(guest_error)) {}

Status RegisterTable::add(RegRow r) {
  const RegArray32 range = r.range;
  const auto refuse = [&](const char* why) {
    return fail(Errc::invalid_argument, std::string("register row ") + r.name + ": " + why);
  };
  if (range.count == 0) return refuse("covers nothing");
  const bool stores = r.kind == RegKind::plain || r.kind == RegKind::rw1c;
  if (stores && !r.storage) return refuse("has no storage");
  if ((r.kind == RegKind::write_only || r.kind == RegKind::sensitive) && !r.write)
    return refuse("has no write handler");
  if ((r.kind == RegKind::read_only || r.kind == RegKind::sensitive) && !r.read && !r.storage)
    return refuse("has nothing to read");
  bool clash = false;
  if (range.count > MAX_HASHED_ENTRIES) {
    const uint64_t end = uint64_t{range.base} + uint64_t{range.stride} * range.count;
    for (const auto& [offset, row_index] : exact_) clash |= range.contains(offset);
    for (uint32_t w : windows_) {
      const RegArray32 o = rows_[w].range;
      clash |= range.base < uint64_t{o.base} + uint64_t{o.stride} * o.count && o.base < end;
    }
  } else {
    for (uint32_t i = 0; i < range.count; ++i) clash |= find(range[i].offset) != nullptr;
  }
  if (clash) return refuse("overlaps another");
  const auto index = static_cast<uint32_t>(rows_.size());
  rows_.push_back(std::move(r));
  if (range.count > MAX_HASHED_ENTRIES) {
    windows_.push_back(index);
  } else {
    for (uint32_t i = 0; i < range.count; ++i) exact_.emplace(range[i].offset, index);
  }
  return {};
}

const RegRow* RegisterTable::find(uint32_t offset) const {
  if (auto it = exact_.find(offset); it != exact_.end()) return &rows_[it->second];
  for (uint32_t w : windows_)
    if (rows_[w].range.contains(offset)) return &rows_[w];
  return nullptr;
}

uint32_t RegisterTable::read(uint32_t offset) {
  const RegRow* r = find(offset);
  if (!r) {
    ++stats_.bad_reads;
    guest_error("read of unimplemented register " + hex(offset));
    return regs::BAD_REGISTER;
  }
  if (!open(r->gate)) {
    ++stats_.disabled_reads;
    return regs::BAD_DISABLED_UNIT;
  }
  const uint32_t i = r->range.index_of(offset);
  switch (r->kind) {
    case RegKind::constant: return r->value;
    case RegKind::write_only: return 0;
    case RegKind::plain:
    case RegKind::rw1c: return r->storage[i];
    case RegKind::read_only:
    case RegKind::sensitive: return r->storage ? r->storage[i] : r->read ? r->read(i) : 0;
  }
  return 0;
}

void RegisterTable::write(uint32_t offset, uint32_t value) {
  const RegRow* r = find(offset);
  if (!r) {
    ++stats_.bad_writes;
    guest_error(strfmt("write of %s to unimplemented register %s", hex(value).c_str(), hex(offset).c_str()));
    return;
  }
  if (!open(r->gate)) {
    ++stats_.disabled_writes;
    return;
  }
  const uint32_t i = r->range.index_of(offset);
  switch (r->kind) {
    case RegKind::plain: r->storage[i] = (r->storage[i] & ~r->mask) | (value & r->mask); break;
    case RegKind::rw1c: r->storage[i] &= ~(value & r->mask); break;
    case RegKind::write_only:
    case RegKind::sensitive:
      if (r->kind == RegKind::sensitive) ++stats_.sensitive_writes;
      r->write(i, value);
      return;
    case RegKind::constant:
    case RegKind::read_only:
      ++stats_.ro_writes;
      guest_error(strfmt("write of %s to read-only register %s", hex(value).c_str(), r->name));
      return;
  }
  if (r->after) r->after();
}

}  // namespace vgpu
