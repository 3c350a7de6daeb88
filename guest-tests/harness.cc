// SPDX-License-Identifier: GPL-2.0-or-later
#include "harness.h"

#include <chrono>
#include <cstdio>

namespace vgpu::guest {

bool Selection::matches(const TestCase& t) const {
  if (filter == "all") return t.group != Group::bench && t.group != Group::named;
  if (filter == "conformance") return t.group == Group::conformance;
  if (filter == "workloads") return t.group == Group::workload;
  return filter == t.name;
}

Status check(bool ok, const std::string& reason) {
  if (ok) return {};
  return fail(Errc::device_error, reason);
}

void note(const std::string& text) {
  std::printf("    %s\n", text.c_str());
  std::fflush(stdout);
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

int run_tests(std::string_view program, std::span<const TestCase> tests, const Selection& selection) {
  int passed = 0, failed = 0;
  for (const TestCase& t : tests) {
    if (!selection.matches(t)) continue;
    const auto start = std::chrono::steady_clock::now();
    const Status st = t.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (st) {
      std::printf("PASS %s (%s s)\n", t.name, fixed(s, 2).c_str());
      ++passed;
    } else {
      std::printf("FAIL %s: %s\n", t.name, st.error().what().c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  if (passed + failed == 0) {  // another program's test, or none: run-all tells which
    std::printf("SKIP %.*s: no test of its own matches '%.*s'\n", static_cast<int>(program.size()), program.data(),
                static_cast<int>(selection.filter.size()), selection.filter.data());
    return 0;
  }
  std::printf("%.*s: %d passed, %d failed\n", static_cast<int>(program.size()), program.data(), passed, failed);
  return failed;
}

}  // namespace vgpu::guest
