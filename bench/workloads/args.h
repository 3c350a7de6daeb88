// SPDX-License-Identifier: GPL-2.0-or-later
// Command-line values of vgpu-bench, validated with errors that name the
// bad value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "testbed/testbed.h"
#include "testbed/workloads/workload.h"

namespace vgpu::bench {

std::vector<std::string> split_list(std::string_view s);
// A whole number from min to max; a comma list of them.
[[nodiscard]] Result<uint32_t> parse_count(std::string_view flag, std::string_view value, uint32_t max,
                                           uint32_t min = 1);
// A value of an option of the option table (vgpu/option_table.h), by the
// option's name: its parse, bounds and message, the same as QEMU's,
// vgpud's and the C API's.
[[nodiscard]] Result<uint64_t> parse_option(const char* name, std::string_view value);
// A comma-separated list of them ("auto,0,16").
[[nodiscard]] Result<std::vector<uint32_t>> parse_option_list(const char* name, std::string_view value);
// A slice-blocks value as written (auto or the count).
std::string slice_name(uint32_t slice_blocks);
[[nodiscard]] Result<std::vector<uint32_t>> parse_counts(std::string_view flag, std::string_view value, uint32_t max,
                                                         uint32_t min = 1);
[[nodiscard]] Result<std::vector<testbed::Mode>> parse_modes(std::string_view value);
[[nodiscard]] Result<std::vector<const testbed::workloads::WorkloadSpec*>> parse_workloads(std::string_view value);

// "--flag value" or "--flag=value", each value handed to its flag's
// handler, which says what is wrong with it. An unknown option, a flag
// without its value, a stray argument or a value its handler refuses: an
// error naming it (the commands print it with their usage and exit 2).
using FlagHandler = std::function<Status(std::string_view value)>;
using FlagHandlers = std::map<std::string, FlagHandler, std::less<>>;
[[nodiscard]] Status parse_flags(std::span<char*> args, const FlagHandlers& handlers);
// Handlers for the common kinds: a count from min (1 unless given) to
// max, a comma list, on or off (the option table's one spelling of a
// boolean), any text, an option of the option table.
FlagHandler count_flag(std::string_view flag, uint32_t& dst, uint32_t max, uint32_t min = 1);
FlagHandler list_flag(std::vector<std::string>& dst);
FlagHandler on_off_flag(std::string_view flag, bool& dst);
FlagHandler text_flag(std::string& dst);
template <typename T>
FlagHandler option_flag(const char* name, T& dst) {
  return [name, &dst](std::string_view v) -> Status {
    auto n = parse_option(name, v);
    if (!n) return std::unexpected(n.error());
    dst = static_cast<T>(*n);
    return {};
  };
}
// A handler from a parser of the Result<T>(std::string_view) kind.
template <typename T, typename Parse>
FlagHandler parsed_flag(T& dst, Parse parse) {
  return [&dst, parse](std::string_view v) -> Status {
    auto r = parse(v);
    if (!r) return std::unexpected(r.error());
    dst = std::move(*r);
    return {};
  };
}

// --wait irq|poll and --wait-spin-us N: how the driver's fence waits wait.
void add_wait_flags(FlagHandlers& handlers, driver::DeviceOptions& device);
std::string wait_name(const driver::DeviceOptions& device);

}  // namespace vgpu::bench
