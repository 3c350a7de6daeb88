// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/mmu_flush.h"
#include "driver/msg.h"


#include "driver/poll.h"
#include "vgpu/regs.h"

namespace vgpu::driver {

namespace r = regs;

Status bar_flush(Port& port, uint64_t timeout_ns) {
  port.write32(Bar::bar0, r::pflush::FLUSH.offset, r::pflush::FlushTrigger::mask);
  auto idle = [&] { return !(port.read32(Bar::bar0, r::pflush::FLUSH.offset) & r::pflush::FlushPending::mask); };
  if (!poll_until(port, idle, timeout_ns)) return fail(Errc::timeout, "BAR flush: pending bit did not clear");
  return {};
}

Status tlb_invalidate(Port& port, uint64_t pd_addr, bool hub_only, uint64_t timeout_ns) {
  const uint32_t ctrl = r::mmu::CTRL.offset;
  if (!poll_until(
          port, [&] { return r::mmu::CtrlFreeSlots::get(port.read32(Bar::bar0, ctrl)) != 0; }, timeout_ns))
    return fail(Errc::timeout, msg("TLB invalidate of page directory {}: no free slot", hex(pd_addr)));
  port.write32(Bar::bar0, r::mmu::INVALIDATE_PDB.offset,
               r::mmu::InvalidatePdbAddr::make(static_cast<uint32_t>(pd_addr >> 12)) |
                   r::mmu::InvalidatePdbTarget::make(0));
  uint32_t trigger = r::mmu::InvalidateTrigger::mask | r::mmu::InvalidatePageAll::mask;
  if (hub_only) trigger |= r::mmu::InvalidateHubOnly::mask;
  port.write32(Bar::bar0, r::mmu::INVALIDATE.offset, trigger);
  if (!poll_until(
          port, [&] { return (port.read32(Bar::bar0, ctrl) & r::mmu::CtrlInvalidateDone::mask) != 0; }, timeout_ns))
    return fail(Errc::timeout, msg("TLB invalidate of page directory {}: not done", hex(pd_addr)));
  return {};
}

}  // namespace vgpu::driver
