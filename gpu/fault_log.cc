// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/fault_log.h"

#include "vgpu/formats.h"

namespace vgpu::gpu {

using namespace regs::pfifo;

namespace {
// Every fault unit of the model (BARs, PFIFO, copy) sits in the hub.
constexpr bool HUB_CLIENT = true;
}  // namespace

void FaultLog::record(const Fault& f) {
  const auto unit = static_cast<uint32_t>(f.unit);
  if (unit >= NUM_FAULT_UNITS) return;
  Info& i = info_[unit];
  i.inst = FaultInstAddr::make(static_cast<uint32_t>(f.inst >> fmt::TABLE_ALIGN_SHIFT));
  i.va_lo = lo32(f.va);
  i.va_hi = hi32(f.va);
  i.type = FaultReason::make(static_cast<uint32_t>(f.reason)) | FaultHub::make(HUB_CLIENT) | FaultWrite::make(f.write) |
           FaultChid::make(f.chid.value_or(0)) | FaultChidValid::make(f.chid.has_value());
  pending_ |= 1u << unit;
}

void FaultLog::reset() {
  info_ = {};
  pending_ = 0;
}

std::vector<RegRow> FaultLog::registers() {
  const auto field = [this](const char* name, RegArray32 arr, uint32_t Info::*member) {
    return read_only(name, arr, [this, member](uint32_t i) { return info_[i].*member; }).gated(Gate::pfifo);
  };
  std::vector<RegRow> rows;
  rows.push_back(field("PFIFO.FAULT_INST", FAULT_INST, &Info::inst));
  rows.push_back(field("PFIFO.FAULT_VA_LO", FAULT_VA_LO, &Info::va_lo));
  rows.push_back(field("PFIFO.FAULT_VA_HI", FAULT_VA_HI, &Info::va_hi));
  rows.push_back(field("PFIFO.FAULT_TYPE", FAULT_TYPE, &Info::type));
  rows.push_back(rw1c("PFIFO.FAULT_UNIT_PENDING", FAULT_UNIT_PENDING, pending_).gated(Gate::pfifo));
  return rows;
}

}  // namespace vgpu::gpu
