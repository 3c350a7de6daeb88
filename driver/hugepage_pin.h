// SPDX-License-Identifier: GPL-2.0-or-later
// Pinned memory inside a Linux guest (docs/runtime.md, "Pinned host
// memory"): 2 MiB hugepages, which the kernel never migrates or swaps,
// mapped populated and locked; each 4 KiB page's guest-physical address
// comes from /proc/self/pagemap (root only: other users read frame number
// 0). Without an IOMMU in the guest that address is the bus address the
// device sees. The hugepages come from /proc/sys/vm/nr_hugepages, which
// whoever runs the program sets. A kernel with no hugepage support gets
// locked 4 KiB pages instead (not swapped, but migratable: a weaker pin).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "driver/port.h"

namespace vgpu::driver {

[[nodiscard]] Result<PinnedPages> pin_hugepages(uint64_t bytes);
void unpin_hugepages(std::span<std::byte> host);

}  // namespace vgpu::driver
