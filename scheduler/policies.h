// SPDX-License-Identifier: GPL-2.0-or-later
// Constructors of the three policies, one file each; callers use
// make_policy() (policy.h), which checks the name and the parameters.
#pragma once

#include <memory>

#include "scheduler/policy.h"

namespace vgpu::sched {

std::unique_ptr<Policy> make_fifo(const PolicyParams& params);
std::unique_ptr<Policy> make_credit(const PolicyParams& params);
std::unique_ptr<Policy> make_band(const PolicyParams& params);

}  // namespace vgpu::sched
