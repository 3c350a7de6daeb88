// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/policy.h"

#include <algorithm>
#include <array>
#include <string>

#include "scheduler/policies.h"

namespace vgpu::sched {
namespace {

struct PolicyEntry {
  std::string_view name;
  std::unique_ptr<Policy> (*make)(const PolicyParams&);
};

constexpr std::array<PolicyEntry, 3> POLICIES{{
    {"fifo", make_fifo},
    {"credit", make_credit},
    {"band", make_band},
}};

Status check(const PolicyParams& p) {
  if (p.period_ns == 0) return fail(Errc::invalid_argument, "scheduler period 0 ns is not positive");
  if (p.util_interval_ns < p.period_ns)
    return fail(Errc::invalid_argument, "scheduler utilization interval " + std::to_string(p.util_interval_ns) +
                                            " ns is shorter than the period " + std::to_string(p.period_ns) + " ns");
  return {};
}

}  // namespace

Result<std::unique_ptr<Policy>> make_policy(std::string_view name, const PolicyParams& params) {
  if (auto ok = check(params); !ok) return std::unexpected(ok.error());
  for (const auto& e : POLICIES)
    if (e.name == name) return e.make(params);
  return fail(Errc::invalid_argument, "scheduler '" + std::string(name) + "' is not one of " + policy_names());
}

bool policy_known(std::string_view name) {
  return std::ranges::any_of(POLICIES, [name](const PolicyEntry& e) { return e.name == name; });
}

std::string policy_names() {
  std::string out;
  for (const auto& e : POLICIES) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace vgpu::sched
