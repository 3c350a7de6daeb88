// SPDX-License-Identifier: GPL-2.0-or-later
// The last resorts on the model's engine threads: nothing a job throws
// leaves the thread, and engine work that throws becomes a channel error.
#include "gpu/engine_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpu/pfifo.h"

namespace vgpu::gpu {
namespace {

struct Captured {
  std::mutex mutex;
  std::vector<std::string> internal;
  LogFn sink() {
    return [this](LogKind k, const std::string& l) {
      std::lock_guard lock(mutex);
      if (k == LogKind::internal_error) internal.push_back(l);
    };
  }
};

bool wait_until(const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}

TEST(EngineThread, AJobThatThrowsIsLoggedAndTheThreadRunsTheNextOne) {
  Captured c;
  Log log(c.sink());
  EngineThread t("copy", log);
  std::atomic<bool> second{false};
  t.submit([] { throw std::runtime_error("host resource gone"); });
  t.submit([&] { second = true; });
  ASSERT_TRUE(wait_until([&] { return second.load() && t.idle(); }));
  EXPECT_EQ(t.jobs_run(), 2u);
  EXPECT_EQ(log.count(LogKind::internal_error), 1u);
  std::lock_guard lock(c.mutex);
  ASSERT_EQ(c.internal.size(), 1u);
  EXPECT_NE(c.internal[0].find("host resource gone"), std::string::npos);
}

TEST(EngineThread, BriefWorkRunsOnTheCallerOnlyWhileTheEngineIsIdle) {
  Log log([](LogKind, const std::string&) {});
  EngineThread t("compute", log);
  std::thread::id ran_on;
  ASSERT_TRUE(t.run_here_if_idle([&] { ran_on = std::this_thread::get_id(); }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(t.jobs_run(), 1u);

  // A job on the engine: brief work queues behind it instead of overtaking.
  std::atomic<bool> release{false}, started{false};
  t.submit([&] {
    started = true;
    while (!release) std::this_thread::yield();
  });
  ASSERT_TRUE(wait_until([&] { return started.load(); }));
  bool ran_here = false;
  EXPECT_FALSE(t.run_here_if_idle([&] { ran_here = true; }));
  EXPECT_FALSE(ran_here);
  release = true;
  ASSERT_TRUE(wait_until([&] { return t.idle(); }));
  EXPECT_EQ(t.jobs_run(), 2u);
}

TEST(EngineThread, BriefWorkThatThrowsOnTheCallerIsLogged) {
  Captured c;
  Log log(c.sink());
  EngineThread t("copy", log);
  EXPECT_TRUE(t.run_here_if_idle([] { throw std::runtime_error("view gone"); }));
  EXPECT_TRUE(t.idle());
  EXPECT_EQ(log.count(LogKind::internal_error), 1u);
}

TEST(EngineWork, AnAllocationFailureBecomesTheInternalChannelError) {
  Captured c;
  Log log(c.sink());
  const MethodDone r = run_engine_work(log, 9, []() -> MethodDone { throw std::bad_alloc(); });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::internal);
  std::lock_guard lock(c.mutex);
  ASSERT_EQ(c.internal.size(), 1u);
  EXPECT_NE(c.internal[0].find("channel 9"), std::string::npos);
}

TEST(EngineWork, WorkThatSucceedsOrFailsNormallyIsPassedThrough) {
  Log log([](LogKind, const std::string&) {});
  EXPECT_TRUE(run_engine_work(log, 1, []() -> MethodDone { return {}; }).has_value());
  const MethodDone bad = run_engine_work(log, 1, []() -> MethodDone {
    return std::unexpected(ChannelFault{.code = regs::ChannelError::bad_argument});
  });
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, regs::ChannelError::bad_argument);
  EXPECT_EQ(log.count(LogKind::internal_error), 0u);
}

}  // namespace
}  // namespace vgpu::gpu
