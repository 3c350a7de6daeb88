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

std::vector<RegRow> FbUnits::registers() {
  return {
      constant("PUNITS.FBP_COUNT", regs::punits::FBP_COUNT, FBP_COUNT),
      constant("PUNITS.FBP_DISABLED_MASK", regs::punits::FBP_DISABLED_MASK, FBP_NONE_DISABLED),
      constant("PFB.FBPA_MIB", regs::pfb::FBPA_MIB, static_cast<uint32_t>(vram_bytes_ / MiB)),
      // All CTRL fields are read-only; writes (nouveau sets the big-page
      // bit) are accepted and change nothing.
      sensitive(
          "MMU.CTRL", CTRL, [](uint32_t) { return CTRL_VALUE; }, [](uint32_t, uint32_t) {}),
      plain("MMU.INVALIDATE_PDB", INVALIDATE_PDB, invalidate_pdb_, PDB_BITS),
      write_only("MMU.INVALIDATE", INVALIDATE,
                 [this](uint32_t, uint32_t v) {
                   if (!InvalidateTrigger::get(v)) return;
                   ++invalidates_;
                   std::optional<uint64_t> pdb;
                   if (!InvalidateAllPdb::get(v))
                     pdb = uint64_t{InvalidatePdbAddr::get(invalidate_pdb_)} << fmt::TABLE_ALIGN_SHIFT;
                   if (invalidate_) invalidate_(pdb);
                 }),
  };
}

}  // namespace vgpu::gpu
