// SPDX-License-Identifier: GPL-2.0-or-later
// PTIMER: the device's nanosecond clock.
#pragma once

#include <cstdint>

#include "driver/port.h"

namespace vgpu::driver {

// TIME_1, TIME_0, TIME_1 again; retried while the high word moved.
uint64_t read_time_ns(Port& port);

}  // namespace vgpu::driver
