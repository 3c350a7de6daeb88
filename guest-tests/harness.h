// SPDX-License-Identifier: GPL-2.0-or-later
// A minimal named-test harness for the guest programs (no GoogleTest in a
// static guest): a table of {name, group, function}; each test returns a
// Status whose error message is the failure reason. run_tests prints one
// line per test, "PASS name (1.23 s)" or "FAIL name: reason", and ends
// with "<program>: N passed, N failed" (guest-tests/run-all adds up the
// PASS and FAIL lines of every program for the guest's summary line).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/error.h"

namespace vgpu::guest {

// bench: figures, not checks; named: checks that need a harness outside
// the guest (the migration test's chain). Both run only when named (never
// by "all").
enum class Group { conformance, workload, bench, named };

struct TestCase {
  const char* name;
  Group group;
  Status (*run)();
};

// Which tests run_tests runs: "all", "conformance", "workloads", or one
// test name (for reruns by hand).
struct Selection {
  std::string_view filter = "all";
  bool matches(const TestCase& t) const;
};

// Runs the selected tests in table order; returns the number that failed.
int run_tests(std::string_view program, std::span<const TestCase> tests, const Selection& selection);

// Test helpers: a failed check becomes the test's FAIL reason.
[[nodiscard]] Status check(bool ok, const std::string& reason);
// Prints an indented detail line under the current test (figures, counts).
void note(const std::string& text);

// "x 1.5" style formatting without <format> (g++ 12).
std::string fixed(double v, int decimals);

}  // namespace vgpu::guest
