// SPDX-License-Identifier: GPL-2.0-or-later
// The engine back end on per-VM fake workers (gpu_device.h): the engines'
// device calls reach the VM's worker and its bytes, a VM's access outside
// its part faults in its own worker and fails its own stream with the
// reason, a hung worker gives timeout, and the other VM sees nothing (the built-in
// kernels: builtin_test.cc).
#include "worker/gpu_device.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <bit>
#include <cstring>
#include <thread>
#include <vector>
#include "worker/block_map.h"

namespace vgpu::worker {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t PART = 2 * BLOCK_BYTES;  // each VM's VRAM
constexpr uint32_t S0 = 3, S1 = 9;          // VM 0's and VM 1's channels

struct Fixture {
  std::unique_ptr<gpu::Vram> vram;
  std::unique_ptr<WorkerGpuDevice> dev;
};

Fixture make(std::chrono::nanoseconds deadline = 2s) {
  Fixture f;
  auto v = gpu::Vram::create(2 * PART);
  EXPECT_TRUE(v);
  f.vram = std::move(*v);
  WorkerOptions o;
  o.binary = VGPU_WORKER_BIN;
  o.device = "fake";
  auto d = WorkerGpuDevice::create(*f.vram, o, {{0, PART}, {PART, PART}}, deadline);
  EXPECT_TRUE(d) << d.error().what();
  if (d) {
    f.dev = std::move(*d);
    f.dev->assign(S0, 0);
    f.dev->assign(S1, 1);
  }
  return f;
}

void put(gpu::Vram& v, uint64_t at, uint32_t word) { std::memcpy(v.data() + at, &word, sizeof word); }
uint32_t get(const gpu::Vram& v, uint64_t at) {
  uint32_t w;
  std::memcpy(&w, v.data() + at, sizeof w);
  return w;
}

TEST(WorkerGpuDevice, EngineWorkRunsOnTheVmsBlocks) {
  Fixture f = make();
  ASSERT_TRUE(f.dev);
  gpu::Device& d = *f.dev;
  const uint64_t a = BLOCK_BYTES - 16, b = PART + 64;  // one in each VM's part
  put(*f.vram, a, 0x11223344);
  d.upload(a, sizeof(uint32_t));
  d.copy(S0, d.mirror(a + 8), d.mirror(a), sizeof(uint32_t));
  d.fill(S0, reinterpret_cast<float*>(d.mirror(a + 12)), 2, 1.5f);  // across VM 0's two blocks
  d.fill(S1, reinterpret_cast<float*>(d.mirror(b)), 1, -2.0f);
  ASSERT_TRUE(d.synchronize(S0));
  ASSERT_TRUE(d.synchronize(S1));
  d.download(0, 2 * PART);
  EXPECT_EQ(get(*f.vram, a + 8), 0x11223344u);
  EXPECT_EQ(get(*f.vram, a + 12), std::bit_cast<uint32_t>(1.5f));
  EXPECT_EQ(get(*f.vram, a + 16), std::bit_cast<uint32_t>(1.5f));
  EXPECT_EQ(get(*f.vram, b), std::bit_cast<uint32_t>(-2.0f));
}

TEST(WorkerGpuDevice, HostCopiesGoThroughTheBulkWindowRowByRow) {
  Fixture f = make();
  ASSERT_TRUE(f.dev);
  gpu::Device& d = *f.dev;
  constexpr uint64_t W = 24, H = 5, PITCH = 40;
  std::vector<std::byte> src(PITCH * H), back(PITCH * H, std::byte{0});
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 7 + 1);
  d.copy_2d_from_host(S1, d.mirror(PART + 256), 64, src.data(), PITCH, W, H);
  d.copy_2d_to_host(S1, back.data(), PITCH, d.mirror(PART + 256), 64, W, H);
  ASSERT_TRUE(d.synchronize(S1));
  for (uint64_t r = 0; r < H; ++r)
    EXPECT_EQ(std::memcmp(back.data() + r * PITCH, src.data() + r * PITCH, W), 0) << "row " << r;
}

TEST(WorkerGpuDevice, AnAccessOutsideTheVmsPartFaultsInItsWorkerOnly) {
  Fixture f = make();
  ASSERT_TRUE(f.dev);
  gpu::Device& d = *f.dev;
  d.fill(S1, reinterpret_cast<float*>(d.mirror(PART)), 4, 3.0f);
  ASSERT_TRUE(d.synchronize(S1));
  const int pid1 = f.dev->info(1)->pid;

  d.fill(S0, reinterpret_cast<float*>(d.mirror(PART)), 1, 0.0f);  // VM 1's VRAM: unmapped in VM 0's worker
  auto s = d.synchronize(S0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("mmu fault at VA 0x"), std::string::npos) << s.error().message;
  auto failure = f.dev->last_failure(S0);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->error, regs::ChannelError::mmu_fault);
  EXPECT_EQ(failure->addr, WorkerGpuDevice::device_va(PART));
  auto channel = f.dev->failure(S0);  // what the engines make the channel's error
  ASSERT_TRUE(channel);
  EXPECT_EQ(channel->code, regs::ChannelError::kernel_error);
  EXPECT_NE(channel->reason.find("mmu fault at VA"), std::string::npos);

  // VM 1: the same worker, its bytes intact, still working.
  EXPECT_EQ(f.dev->info(1)->pid, pid1);
  d.download(PART, 16);
  EXPECT_EQ(get(*f.vram, PART + 12), std::bit_cast<uint32_t>(3.0f));
  ASSERT_TRUE(d.synchronize(S1));
  // VM 0: a new worker with its part mapped again.
  d.fill(S0, reinterpret_cast<float*>(d.mirror(0)), 1, 1.0f);
  EXPECT_TRUE(d.synchronize(S0));
  EXPECT_EQ(f.dev->info(0)->restarts, 1u);
}

TEST(WorkerGpuDevice, AHungWorkerGivesTimeoutAndTheOtherVmRuns) {
  Fixture f = make(200ms);
  ASSERT_TRUE(f.dev);
  gpu::Device& d = *f.dev;
  d.spin(S0, 3'600'000'000'000);  // an hour: killed at the deadline
  auto s = d.synchronize(S0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("past its deadline"), std::string::npos) << s.error().message;
  ASSERT_TRUE(f.dev->last_failure(S0));
  EXPECT_EQ(f.dev->last_failure(S0)->error, regs::ChannelError::timeout);
  EXPECT_EQ(f.dev->failure(S0)->code, regs::ChannelError::timeout);
  d.fill(S1, reinterpret_cast<float*>(d.mirror(PART)), 1, 5.0f);
  EXPECT_TRUE(d.synchronize(S1));
  EXPECT_EQ(f.dev->info(1)->restarts, 0u);
}

// The engines' scratch: a buffer scattered over two physical runs is
// gathered into the stream's region, worked on there and scattered back;
// the region is reused once freed, bounded by what one operation may
// gather, its own per stream, and mapped again in a respawned worker.
TEST(WorkerGpuDevice, ScratchGathersAndScattersInTheStreamsOwnRegion) {
  Fixture f = make();
  ASSERT_TRUE(f.dev);
  gpu::Device& d = *f.dev;
  constexpr uint64_t N = 1000, RUN = N * sizeof(float);
  const uint64_t runs[2] = {BLOCK_BYTES - RUN / 2, BLOCK_BYTES + 8192};  // the first straddles two blocks
  std::vector<float> in(2 * N);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) - 700.5f;
  for (int r = 0; r < 2; ++r) {
    std::memcpy(f.vram->data() + runs[r], in.data() + r * N, RUN);
    d.upload(runs[r], RUN);
  }
  std::byte* sc = d.alloc(S0, 2 * RUN);
  ASSERT_NE(sc, nullptr);
  for (int r = 0; r < 2; ++r) d.copy(S0, sc + r * RUN, d.mirror(runs[r]), RUN);
  auto* v = reinterpret_cast<float*>(sc);
  d.saxpy(S0, 2.0f, v, v, 2 * N);  // v = 2v + v
  for (int r = 0; r < 2; ++r) d.copy(S0, d.mirror(runs[r]), sc + r * RUN, RUN);
  d.free(S0, sc);
  ASSERT_TRUE(d.synchronize(S0));
  for (int r = 0; r < 2; ++r) d.download(runs[r], RUN);
  for (size_t i = 0; i < in.size(); ++i) {
    float got;
    std::memcpy(&got, f.vram->data() + runs[i / N] + (i % N) * sizeof(float), sizeof got);
    ASSERT_EQ(got, 3.0f * in[i]) << i;
  }
  EXPECT_EQ(d.alloc(S0, 64), sc) << "freed: the region starts over";
  EXPECT_NE(d.alloc(S1, 64), nullptr);
  EXPECT_NE(d.alloc(S1, 64), d.alloc(S0, 64)) << "each stream its own region";
  EXPECT_EQ(d.alloc(S0, gpu::MAX_BOUNCE_BYTES + BLOCK_BYTES), nullptr) << "more than one operation may gather";

  ASSERT_EQ(kill(f.dev->info(0)->pid, SIGKILL), 0);
  std::vector<WorkerGpuDevice::Ended> ended;  // as vgpud's main loop finds it
  for (int i = 0; i < 500 && ended.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ended = f.dev->respawn_ended();
  }
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(d.synchronize(S0)) << "the lost worker, once";
  std::byte* again = d.alloc(S0, RUN);  // the new worker maps the region again
  ASSERT_NE(again, nullptr);
  d.fill(S0, reinterpret_cast<float*>(again), N, 4.0f);
  d.copy(S0, d.mirror(runs[1]), again, RUN);
  d.free(S0, again);
  ASSERT_TRUE(d.synchronize(S0));
  d.download(runs[1], RUN);
  EXPECT_EQ(get(*f.vram, runs[1] + RUN - sizeof(float)), std::bit_cast<uint32_t>(4.0f));
}

// A worker killed between commands (vgpud's main loop asks): its VM's
// streams fail once, the next worker starts and maps the part; the other
// VM's worker is left alone.
TEST(WorkerGpuDevice, AWorkerEndedBetweenCommandsIsRespawnedAndItsStreamsFailOnce) {
  Fixture f = make();
  ASSERT_TRUE(f.dev);
  EXPECT_TRUE(f.dev->respawn_ended().empty());
  const int pid0 = f.dev->info(0)->pid, pid1 = f.dev->info(1)->pid;
  gpu::Device& d = *f.dev;
  constexpr uint64_t KEPT = BLOCK_BYTES + 64;  // valid on both sides before the kill
  put(*f.vram, KEPT, 0xfeedf00d);
  d.upload(KEPT, sizeof(uint32_t));
  ASSERT_EQ(kill(pid0, SIGKILL), 0);
  std::vector<WorkerGpuDevice::Ended> ended;
  for (int i = 0; i < 500 && ended.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ended = f.dev->respawn_ended();
  }
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].id, 0u);
  EXPECT_EQ(ended[0].old_pid, pid0);
  EXPECT_GT(ended[0].new_pid, 0);
  EXPECT_NE(ended[0].new_pid, pid0);
  EXPECT_NE(ended[0].failure.reason.find("killed by signal"), std::string::npos) << ended[0].failure.reason;
  EXPECT_EQ(f.dev->info(0)->pid, ended[0].new_pid);
  EXPECT_EQ(f.dev->info(0)->restarts, 1u);
  put(*f.vram, KEPT, 0);
  d.download(KEPT, sizeof(uint32_t));
  EXPECT_EQ(get(*f.vram, KEPT), 0xfeedf00du) << "host-valid bytes are on the new worker's blocks too";
  EXPECT_FALSE(d.synchronize(S0)) << "the lost worker, once";
  ASSERT_TRUE(d.failure(S0));
  EXPECT_EQ(d.failure(S0)->code, regs::ChannelError::kernel_error);
  d.fill(S0, reinterpret_cast<float*>(d.mirror(0)), 1, 3.0f);
  EXPECT_TRUE(d.synchronize(S0));
  d.download(0, sizeof(float));
  EXPECT_EQ(get(*f.vram, 0), std::bit_cast<uint32_t>(3.0f));
  EXPECT_TRUE(d.synchronize(S1));
  EXPECT_EQ(f.dev->info(1)->pid, pid1);
  EXPECT_EQ(f.dev->info(1)->restarts, 0u);
}

}  // namespace
}  // namespace vgpu::worker
