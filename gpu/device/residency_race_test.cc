// SPDX-License-Identifier: GPL-2.0-or-later
// A CPU write and an engine's upload of the same 64 KiB page, forced into
// the interleaving that lost a saxpy in tests/migration_writeback_test
// (docs/migration.md §8): the writer has told the tracker and not yet
// stored when engine work on the page prepares, runs and finishes. The
// writer's bytes must survive on the host and reach the device.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "gpu/device/fake_device.h"
#include "gpu/device/residency.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = ResidencyTracker::PAGE;
constexpr uint64_t RESULT = 2 * PAGE;         // the engine's word
constexpr uint64_t CPU_WORD = 2 * PAGE + 64;  // the CPU's word, same tracker page
constexpr uint32_t OLD = 0x01d, NEW = 0xbeef, RESULT_VALUE = 7;
// How long the test waits, at most, for the engine to finish or to wait
// for the paused store (a bound for a stalled machine, not a timing).
constexpr auto ENGINE_LIMIT = std::chrono::seconds(10);

// Between Vram and the tracker: forwards everything, and holds the one
// write of `paused` after the tracker was told of it, before its store.
class PausingObserver final : public VramObserver {
 public:
  PausingObserver(ResidencyTracker& res, uint64_t paused) : res_(res), paused_(paused) {}
  void host_access(uint64_t addr, uint64_t len, bool write) override { res_.host_access(addr, len, write); }
  void host_remapped(uint64_t addr, uint64_t len, bool shared) override { res_.host_remapped(addr, len, shared); }
  void begin_host_write(uint64_t addr, uint64_t len) override {
    res_.begin_host_write(addr, len);
    if (addr == paused_) hold();
  }
  void end_host_write(uint64_t addr, uint64_t len) override { res_.end_host_write(addr, len); }

  void wait_told() {
    std::unique_lock l(m_);
    cv_.wait(l, [&] { return told_; });
  }
  void release() {
    std::lock_guard l(m_);
    go_ = true;
    cv_.notify_all();
  }

 private:
  void hold() {
    std::unique_lock l(m_);
    told_ = true;
    cv_.notify_all();
    cv_.wait(l, [&] { return go_; });
  }
  ResidencyTracker& res_;
  uint64_t paused_;
  std::mutex m_;
  std::condition_variable cv_;
  bool told_ = false, go_ = false;
};

// The page the CPU writes starts device-only (as after a job: the write
// downloads it and takes the lock) or host (the write's lock-free path).
class ResidencyRace : public ::testing::TestWithParam<bool> {};

TEST_P(ResidencyRace, ACpuWriteToldBeforeAnUploadAndStoredAfterIsKept) {
  auto vram = std::move(*Vram::create(64 * PAGE));
  FakeDevice dev{*vram};
  ResidencyTracker res{vram->size(), dev};
  vram->set_observer(&res);
  ASSERT_TRUE(vram->write32(CPU_WORD, OLD));
  if (GetParam()) {
    res.prepare_write(RESULT, sizeof RESULT_VALUE, false);
    res.finish_write(RESULT, sizeof RESULT_VALUE);
    ASSERT_EQ(res.state(RESULT), Residency::device);
  }

  PausingObserver pause(res, CPU_WORD);
  vram->set_observer(&pause);
  std::thread cpu([&] { EXPECT_TRUE(vram->write32(CPU_WORD, NEW)); });
  pause.wait_told();
  // The engine's job on the page runs while the store is held: it either
  // finishes (its upload missed the store) or waits for the store.
  std::atomic<bool> engine_done{false};
  std::thread engine([&] {
    res.prepare_write(RESULT, sizeof RESULT_VALUE, false);
    std::memcpy(dev.mirror(RESULT), &RESULT_VALUE, sizeof RESULT_VALUE);
    res.finish_write(RESULT, sizeof RESULT_VALUE);
    engine_done = true;
  });
  const auto limit = std::chrono::steady_clock::now() + ENGINE_LIMIT;
  while (!engine_done && res.writer_waits() == 0 && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  EXPECT_FALSE(engine_done) << "the engine uploaded the page with a store in flight";
  EXPECT_EQ(res.writer_waits(), 1u);
  pause.release();
  cpu.join();
  engine.join();
  vram->set_observer(&res);

  EXPECT_EQ(vram->read32(CPU_WORD), NEW) << "the CPU's store, lost on the host";
  EXPECT_EQ(vram->read32(RESULT), RESULT_VALUE);
  res.prepare_read(CPU_WORD, sizeof NEW);
  uint32_t on_device;
  std::memcpy(&on_device, dev.mirror(CPU_WORD), sizeof on_device);
  EXPECT_EQ(on_device, NEW) << "the device's copy lacks the CPU's store";
  vram->set_observer(nullptr);
}

INSTANTIATE_TEST_SUITE_P(PageState, ResidencyRace, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "device" : "host"; });

}  // namespace
}  // namespace vgpu::gpu
