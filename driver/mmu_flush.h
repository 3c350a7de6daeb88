// SPDX-License-Identifier: GPL-2.0-or-later
// BAR write flush (PFLUSH) and the MMU's TLB invalidate sequence, as
// nouveau's g84_bar_flush and gf100_vmm_invalidate do them.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "driver/poll.h"
#include "driver/port.h"

namespace vgpu::driver {

// Write FLUSH trigger, wait for the pending bit to clear.
[[nodiscard]] Status bar_flush(Port& port, uint64_t timeout_ns = PORT_REGISTER_WAIT);

// Wait for a free invalidate slot, name the page directory, trigger a
// PAGE_ALL invalidate (HUB_ONLY for BAR address spaces), wait for done.
[[nodiscard]] Status tlb_invalidate(Port& port, uint64_t pd_addr, bool hub_only,
                                    uint64_t timeout_ns = PORT_REGISTER_WAIT);

}  // namespace vgpu::driver
