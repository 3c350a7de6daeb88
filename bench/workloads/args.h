// SPDX-License-Identifier: GPL-2.0-or-later
// Command-line values of vgpu-bench, validated with errors that name the
// bad value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "testbed/testbed.h"
#include "testbed/workloads/workload.h"

namespace vgpu::bench {

std::vector<std::string> split_list(std::string_view s);
[[nodiscard]] Result<uint32_t> parse_count(std::string_view flag, std::string_view value, uint32_t max);
[[nodiscard]] Result<std::vector<testbed::Mode>> parse_modes(std::string_view value);
[[nodiscard]] Result<std::vector<uint32_t>> parse_vm_counts(std::string_view value);
[[nodiscard]] Result<std::vector<const testbed::workloads::WorkloadSpec*>> parse_workloads(std::string_view value);

// A string as a JSON string literal.
std::string json_string(std::string_view s);

}  // namespace vgpu::bench
