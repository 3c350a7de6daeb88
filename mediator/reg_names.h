// SPDX-License-Identifier: GPL-2.0-or-later
// Short names of the register units (vgpu/regs.h), for the mediator's
// files: pmc, pbus, pt (PTIMER), pf (PFIFO), mmu.
#pragma once

#include "vgpu/regs.h"

namespace vgpu::mediator {
namespace pmc = regs::pmc;
namespace pbus = regs::pbus;
namespace pt = regs::ptimer;
namespace pf = regs::pfifo;
namespace mmu = regs::mmu;
}  // namespace vgpu::mediator
