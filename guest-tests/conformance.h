// SPDX-License-Identifier: GPL-2.0-or-later
// The guest's driver conformance tests (conformance.cc) and workloads
// (workloads.cc), as tables for the harness.
#pragma once

#include <span>

#include "harness.h"

namespace vgpu::guest {

std::span<const TestCase> conformance_tests();
std::span<const TestCase> workload_tests();
std::span<const TestCase> migration_tests();  // migration.cc

}  // namespace vgpu::guest
