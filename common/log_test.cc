// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vgpu {
namespace {

struct Captured {
  std::vector<std::pair<LogKind, std::string>> lines;
  LogFn sink() {
    return [this](LogKind k, const std::string& l) { lines.emplace_back(k, l); };
  }
};

TEST(Log, PassesLinesWithTheirKind) {
  Captured c;
  Log log(c.sink());
  log.guest_error("bad register");
  log.internal_error("no memory");
  ASSERT_EQ(c.lines.size(), 2u);
  EXPECT_EQ(c.lines[0], std::make_pair(LogKind::guest_error, std::string("bad register")));
  EXPECT_EQ(c.lines[1], std::make_pair(LogKind::internal_error, std::string("no memory")));
}

TEST(Log, AFloodOfOneKindIsRateLimitedAndCounted) {
  Captured c;
  Log log(c.sink());
  const uint64_t n = Log::LOG_BURST + 3 * Log::LOG_EVERY;
  for (uint64_t i = 0; i < n; ++i) log.guest_error("storm");
  EXPECT_EQ(c.lines.size(), Log::LOG_BURST + 3);
  EXPECT_NE(c.lines.back().second.find("more like it not logged"), std::string::npos);
  EXPECT_EQ(log.count(LogKind::guest_error), n);
}

TEST(Log, OneKindsFloodDoesNotSilenceTheOther) {
  Captured c;
  Log log(c.sink());
  for (uint64_t i = 0; i < 10 * Log::LOG_BURST; ++i) log.guest_error("storm");
  log.internal_error("engine thread failed");
  EXPECT_EQ(c.lines.back(), std::make_pair(LogKind::internal_error, std::string("engine thread failed")));
}

}  // namespace
}  // namespace vgpu
