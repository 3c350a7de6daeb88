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
  i.type = FaultReason::make(static_cast<uint32_t>(f.reason)) | FaultHub::make(HUB_CLIENT) |
           FaultWrite::make(f.write) | FaultChid::make(f.chid.value_or(0)) |
           FaultChidValid::make(f.chid.has_value());
  pending_ |= 1u << unit;
}

void FaultLog::reset() {
  info_ = {};
  pending_ = 0;
}

void FaultLog::add_registers(RegisterFile& rf) {
  const auto field = [this](const char* name, RegArray32 arr, uint32_t Info::*member) {
    return RegRecord{name, arr, Access::ro, Gate::pfifo, [this, member](uint32_t i) { return info_[i].*member; },
                     nullptr};
  };
  rf.add(field("PFIFO.FAULT_INST", FAULT_INST, &Info::inst));
  rf.add(field("PFIFO.FAULT_VA_LO", FAULT_VA_LO, &Info::va_lo));
  rf.add(field("PFIFO.FAULT_VA_HI", FAULT_VA_HI, &Info::va_hi));
  rf.add(field("PFIFO.FAULT_TYPE", FAULT_TYPE, &Info::type));
  rf.add(stored_rw1c("PFIFO.FAULT_UNIT_PENDING", FAULT_UNIT_PENDING, Gate::pfifo, pending_));
}

}  // namespace vgpu::gpu
