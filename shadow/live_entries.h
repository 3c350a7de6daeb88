// SPDX-License-Identifier: GPL-2.0-or-later
// Where a table scan has work: the next entry whose guest or shadow word
// is not 0. An entry 0 over a shadow 0 is absent on both sides (no table,
// no page), so a scan writes nothing there and counts it as no bad entry;
// a naive mediator's full sync reads mostly such entries (a small-page
// table has 32,768 of them, a context uses a few).
#pragma once

#include <cstdint>

namespace vgpu::shadow {

// The first index j in [from, count) with guest[j] != 0 or shadow[j] != 0;
// count when there is none. Reads each word once; the guest's table may be
// written meanwhile (the caller reads the entry it processes again).
uint64_t next_live(const uint64_t* guest, const uint64_t* shadow, uint64_t from, uint64_t count);

}  // namespace vgpu::shadow
