// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/fb.h"

#include "vgpu/formats.h"
#include "vgpu/regs.h"

namespace vgpu::gpu {

using namespace regs::mmu;

namespace {
constexpr uint32_t FBP_COUNT = 1;
constexpr uint32_t FBP_NONE_DISABLED = 0;
// Invalidates complete at once: the done bit always reads 1 and every slot is free.
constexpr uint32_t CTRL_VALUE = CtrlInvalidateDone::mask | CtrlFreeSlots::make(CtrlFreeSlots::max);
constexpr uint32_t PDB_BITS = InvalidatePdbTarget::mask | InvalidatePdbAddr::mask;
}  // namespace

void FbUnits::add_registers(RegisterFile& rf) {
  rf.add(constant_ro("PUNITS.FBP_COUNT", regs::punits::FBP_COUNT, Gate::none, FBP_COUNT));
  rf.add(constant_ro("PUNITS.FBP_DISABLED_MASK", regs::punits::FBP_DISABLED_MASK, Gate::none, FBP_NONE_DISABLED));
  const auto mib = static_cast<uint32_t>(vram_bytes_ / MiB);
  rf.add(RegRecord{"PFB.FBPA_MIB", regs::pfb::FBPA_MIB, Access::ro, Gate::none, [mib](uint32_t) { return mib; },
                   nullptr});
  // All CTRL fields are read-only; writes (nouveau sets the big-page bit) are ignored.
  rf.add(RegRecord{"MMU.CTRL", single(CTRL), Access::rw, Gate::none, [](uint32_t) { return CTRL_VALUE; },
                   [](uint32_t, uint32_t) {}});
  rf.add(stored_rw("MMU.INVALIDATE_PDB", INVALIDATE_PDB, Gate::none, invalidate_pdb_, PDB_BITS));
  rf.add(RegRecord{"MMU.INVALIDATE", single(INVALIDATE), Access::wo, Gate::none, nullptr,
                   [this](uint32_t, uint32_t v) {
                     if (!InvalidateTrigger::get(v)) return;
                     ++invalidates_;
                     std::optional<uint64_t> pdb;
                     if (!InvalidateAllPdb::get(v))
                       pdb = uint64_t{InvalidatePdbAddr::get(invalidate_pdb_)} << fmt::TABLE_ALIGN_SHIFT;
                     if (invalidate_) invalidate_(pdb);
                   }});
}

}  // namespace vgpu::gpu
