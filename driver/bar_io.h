// SPDX-License-Identifier: GPL-2.0-or-later
// CPU copies to and from VRAM through BAR1: a memcpy when the port gives a
// direct mapping of the range (asked for at each copy, since mappings
// follow the BAR's page tables), 32-bit BAR accesses otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "driver/port.h"

namespace vgpu::driver {

void bar1_write(Port& port, uint64_t bar_offset, std::span<const std::byte> src, bool allow_direct = true);
void bar1_read(Port& port, uint64_t bar_offset, std::span<std::byte> dst, bool allow_direct = true);

}  // namespace vgpu::driver
