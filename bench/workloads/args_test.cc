// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench's flags: --flag value and --flag=value, unknown options and
// missing values named, numbers parsed whole.
#include "bench/workloads/args.h"

#include <gtest/gtest.h>

namespace vgpu::bench {
namespace {

// parse_flags over a list of strings (as argv).
Status parse(std::vector<std::string> args, const FlagHandlers& handlers) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_flags(std::span<char*>(argv), handlers);
}

TEST(BenchArgs, FlagValueAndFlagEqualsValue) {
  uint32_t runs = 0, vms = 0;
  std::string json;
  const FlagHandlers h{{"--runs", count_flag("--runs", runs, 100)},
                       {"--vms", count_flag("--vms", vms, 16)},
                       {"--json", text_flag(json)}};
  ASSERT_TRUE(parse({"--runs", "7", "--vms=3", "--json=a=b.json"}, h));
  EXPECT_EQ(runs, 7u);
  EXPECT_EQ(vms, 3u);
  EXPECT_EQ(json, "a=b.json") << "only the first '=' splits";
}

TEST(BenchArgs, ProblemsAreNamed) {
  uint32_t runs = 0;
  const FlagHandlers h{{"--runs", count_flag("--runs", runs, 100)}};
  auto message = [&](std::vector<std::string> args) {
    Status s = parse(std::move(args), h);
    return s ? std::string("accepted") : s.error().message;
  };
  EXPECT_EQ(message({"--bogus", "1"}), "unknown option '--bogus'");
  EXPECT_EQ(message({"--bogus=1"}), "unknown option '--bogus'");
  EXPECT_EQ(message({"--runs"}), "--runs: needs a value");
  EXPECT_EQ(message({"stray"}), "unexpected argument 'stray'");
  EXPECT_EQ(message({"--runs", "7abc"}), "--runs: '7abc' is not a whole number from 1 to 100");
  EXPECT_EQ(message({"--runs=2.5"}), "--runs: '2.5' is not a whole number from 1 to 100");
  EXPECT_EQ(message({"--runs", "0"}), "--runs: '0' is not a whole number from 1 to 100");
  EXPECT_EQ(message({"--runs="}), "--runs: '' is not a whole number from 1 to 100");
}

}  // namespace
}  // namespace vgpu::bench
