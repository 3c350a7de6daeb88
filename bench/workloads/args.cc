// SPDX-License-Identifier: GPL-2.0-or-later
#include "bench/workloads/args.h"

#include <algorithm>
#include <charconv>

#include "common/text.h"
#include "vgpu/option_table.h"

namespace vgpu::bench {

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string_view::npos ? s.size() : comma;
    out.emplace_back(s.substr(start, end - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<uint32_t> parse_count(std::string_view flag, std::string_view value, uint32_t max, uint32_t min) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < min || v > max)
    return fail(Errc::invalid_argument,
                strfmt("%.*s: '%.*s' is not a whole number from %u to %u", static_cast<int>(flag.size()), flag.data(),
                       static_cast<int>(value.size()), value.data(), min, max));
  return v;
}

Result<std::vector<uint32_t>> parse_counts(std::string_view flag, std::string_view value, uint32_t max, uint32_t min) {
  std::vector<uint32_t> counts;
  for (const auto& v : split_list(value)) {
    auto n = parse_count(flag, v, max, min);
    if (!n) return std::unexpected(n.error());
    counts.push_back(*n);
  }
  return counts;
}

Status parse_flags(std::span<char*> args, const FlagHandlers& handlers) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg.substr(0, 2) != "--")
      return fail(Errc::invalid_argument,
                  strfmt("unexpected argument '%.*s'", static_cast<int>(arg.size()), arg.data()));
    // --flag=value or --flag value
    const size_t eq = arg.find('=');
    const std::string_view flag = arg.substr(0, eq);
    const auto h = handlers.find(flag);
    if (h == handlers.end())
      return fail(Errc::invalid_argument, strfmt("unknown option '%.*s'", static_cast<int>(flag.size()), flag.data()));
    std::string_view value;
    if (eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= args.size())
        return fail(Errc::invalid_argument, strfmt("%.*s: needs a value", static_cast<int>(flag.size()), flag.data()));
      value = args[++i];
    }
    if (Status s = h->second(value); !s) return s;
  }
  return {};
}

FlagHandler count_flag(std::string_view flag, uint32_t& dst, uint32_t max, uint32_t min) {
  return parsed_flag(dst, [flag = std::string(flag), max, min](std::string_view v) {
    return parse_count(flag, v, max, min);
  });
}

FlagHandler list_flag(std::vector<std::string>& dst) {
  return [&dst](std::string_view v) -> Status {
    dst = split_list(v);
    return {};
  };
}

FlagHandler on_off_flag(std::string_view flag, bool& dst) {
  return [flag = std::string(flag), &dst](std::string_view v) -> Status {
    if (v != "on" && v != "off")
      return fail(Errc::invalid_argument,
                  strfmt("%s: '%.*s' is not on or off", flag.c_str(), static_cast<int>(v.size()), v.data()));
    dst = v == "on";
    return {};
  };
}

FlagHandler text_flag(std::string& dst) {
  return [&dst](std::string_view v) -> Status {
    dst = v;
    return {};
  };
}

void add_wait_flags(FlagHandlers& handlers, driver::DeviceOptions& device) {
  handlers["--wait"] = [&device](std::string_view v) -> Status {
    if (v != "irq" && v != "poll")
      return fail(Errc::invalid_argument, "--wait: irq or poll, not '" + std::string(v) + "'");
    device.channel.use_interrupts = v == "irq";
    return {};
  };
  handlers["--wait-spin-us"] = [&device](std::string_view v) -> Status {
    auto us = parse_count("--wait-spin-us", v, 1'000'000, 0);
    if (!us) return std::unexpected(us.error());
    device.wait_spin_ns = uint64_t{*us} * 1000;
    return {};
  };
}

std::string wait_name(const driver::DeviceOptions& device) {
  if (!device.channel.use_interrupts) return "poll";
  return device.wait_spin_ns ? strfmt("irq, spin %lu us", device.wait_spin_ns / 1000) : "irq";
}

Result<std::vector<testbed::Mode>> parse_modes(std::string_view value) {
  std::vector<testbed::Mode> modes;
  for (const auto& name : split_list(value)) {
    auto m = testbed::parse_mode(name);
    if (!m) return std::unexpected(m.error().context("--modes"));
    modes.push_back(*m);
  }
  return modes;
}

Result<std::vector<const testbed::workloads::WorkloadSpec*>> parse_workloads(std::string_view value) {
  std::vector<const testbed::workloads::WorkloadSpec*> out;
  for (const auto& name : split_list(value)) {
    const auto* w = testbed::workloads::find(name);
    if (!w) {
      std::string known;
      for (const auto& s : testbed::workloads::registry()) known += (known.empty() ? "" : ", ") + std::string(s.name);
      return fail(Errc::invalid_argument, "unknown workload '" + name + "' (" + known + ")");
    }
    out.push_back(w);
  }
  return out;
}

Result<uint64_t> parse_option(const char* name, std::string_view value) {
  uint64_t n = 0;
  char err[256];
  if (!vgpu_option_parse(vgpu_option_find(name), std::string(value).c_str(), &n, err, sizeof err))
    return fail(Errc::invalid_argument, err);
  return n;
}

Result<std::vector<uint32_t>> parse_option_list(const char* name, std::string_view value) {
  std::vector<uint32_t> out;
  for (const std::string& one : split_list(value)) {
    auto n = parse_option(name, one);
    if (!n) return std::unexpected(n.error());
    out.push_back(static_cast<uint32_t>(*n));
  }
  return out;
}

std::string slice_name(uint32_t s) { return s == VGPU_OPT_SLICE_BLOCKS_AUTO ? "auto" : std::to_string(s); }

}  // namespace vgpu::bench
