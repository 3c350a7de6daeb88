// SPDX-License-Identifier: GPL-2.0-or-later
// System memory DMA on the device (docs/cuda.md, "System memory"), on the
// fake device whatever VGPU_ENGINE_BACKEND says: a copy between guest RAM
// and VRAM is one host<->device transfer per run straight from/to the
// registered RAM, the VRAM side follows the residency rules, DMA errors
// are the model's, and removing a bus window waits for DMA through it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/device/fake_device.h"
#include "gpu/engines/copy_object.h"
#include "gpu/engines/testing/sysmem_env.h"

namespace vgpu::gpu {
namespace {

using namespace cls::copy;
using testing::copy_2d;
using testing::Method;
using testing::pattern;

// System memory that only DMAs through read/write (as QEMU's DMA API).
class NoSpans final : public SystemMemory {
 public:
  explicit NoSpans(std::shared_ptr<SystemMemory> m) : m_(std::move(m)) {}
  bool contains(uint64_t bus, uint64_t len) const override { return m_->contains(bus, len); }
  bool read(uint64_t bus, void* dst, uint64_t len) override { return m_->read(bus, dst, len); }
  bool write(uint64_t bus, const void* src, uint64_t len) override { return m_->write(bus, src, len); }

 private:
  std::shared_ptr<SystemMemory> m_;
};

class DeviceDmaTest : public testing::SysmemEnv {
 protected:
  void SetUp() override {
    EngineEnv::SetUp();
    auto fake = std::make_unique<FakeDevice>(*vram_);
    fake_ = fake.get();
    use_device(std::move(fake));
    attach_ram();
  }

  // Writes pattern(bytes, seed) into `data` and into RAM at `ram_off`, and
  // copies it from there to `dst_va` in one run of ce_.
  void copy_pattern_from_ram(uint64_t ram_off, uint64_t dst_va, uint32_t bytes, uint8_t seed,
                             std::vector<uint8_t>& data) {
    data = pattern(bytes, seed);
    std::memcpy(ram_->data() + ram_off, data.data(), data.size());
    ASSERT_TRUE(send(ce_, copy(SYS_VA + ram_off, dst_va, bytes)).has_value());
  }

  std::vector<uint8_t> vram_host(uint64_t phys, size_t n) const {
    const auto* p = reinterpret_cast<const uint8_t*>(vram_->data() + phys);
    return {p, p + n};
  }
  std::vector<uint8_t> ram_bytes(uint64_t off, size_t n) const {
    const auto* p = reinterpret_cast<const uint8_t*>(ram_->data() + off);
    return {p, p + n};
  }

  FakeDevice* fake_ = nullptr;
  CopyObject ce_;
};

TEST_F(DeviceDmaTest, RamIsRegisteredOnceWhenAttached) {
  const FakeDeviceStats s = fake_->stats();
  EXPECT_EQ(s.host_registrations, 1u);
  EXPECT_EQ(s.registered_mappings, 1u);
  EXPECT_EQ(s.registered_bytes, RAM_BYTES);
  CopyObject ce;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(send(ce, copy(SYS_VA, LINEAR_VA, 4096)).has_value());
  EXPECT_EQ(fake_->stats().host_registrations, 1u);  // not per transfer
  set_system_memory(nullptr);
  EXPECT_EQ(fake_->stats().registered_mappings, 0u);
}

TEST_F(DeviceDmaTest, PinnedUploadIsOneHostToDeviceCopyLeavingVramDeviceValid) {
  std::vector<uint8_t> data;
  ASSERT_NO_FATAL_FAILURE(copy_pattern_from_ram(0x2000, LINEAR_VA, 256 * KiB, 3, data));
  const FakeDeviceStats s = fake_->stats();
  EXPECT_EQ(s.host_to_device, 1u);
  EXPECT_EQ(s.host_to_device_bytes, 256 * KiB);
  EXPECT_EQ(s.unregistered_host_copies, 0u);
  EXPECT_EQ(s.uploads, 0u);  // whole chunks overwritten: nothing to upload first
  // The bytes went to the mirror, not through the model to host VRAM.
  EXPECT_EQ(residency_->state(DATA_PHYS), Residency::device);
  EXPECT_NE(vram_host(DATA_PHYS, data.size()), data);
  EXPECT_EQ(std::memcmp(fake_->mirror_bytes() + DATA_PHYS, data.data(), data.size()), 0);
  // A later CPU read sees them.
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, data.size()), data);
  EXPECT_EQ(residency_->state(DATA_PHYS), Residency::both);
}

TEST_F(DeviceDmaTest, PinnedDownloadIsOneDeviceToHostCopyFromTheMirror) {
  // Put a result on the device only, then copy it to RAM: right bytes with
  // no download of VRAM means they came from the mirror.
  std::vector<uint8_t> data;
  ASSERT_NO_FATAL_FAILURE(copy_pattern_from_ram(0, LINEAR_VA, 192 * KiB, 5, data));
  ASSERT_EQ(residency_->state(DATA_PHYS), Residency::device);
  ASSERT_TRUE(send(ce_, copy(LINEAR_VA, SYS_VA + 512 * KiB + 100, 192 * KiB)).has_value());
  const FakeDeviceStats s = fake_->stats();
  EXPECT_EQ(s.device_to_host, 1u);
  EXPECT_EQ(s.device_to_host_bytes, 192 * KiB);
  EXPECT_EQ(s.downloads, 0u);
  EXPECT_EQ(s.unregistered_host_copies, 0u);
  EXPECT_EQ(ram_bytes(512 * KiB + 100, data.size()), data);
  EXPECT_EQ(residency_->state(DATA_PHYS), Residency::device);  // a read leaves it there
}

TEST_F(DeviceDmaTest, HostValidVramIsUploadedBeforeADownloadToRam) {
  const auto data = pattern(100000, 9);
  write_vec(LINEAR_VA, data);  // CPU write: valid on the host
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy(LINEAR_VA, SYS_VA, 100000)).has_value());
  EXPECT_EQ(fake_->stats().uploads, 1u);  // one coalesced run of chunks
  EXPECT_EQ(fake_->stats().device_to_host, 1u);
  EXPECT_EQ(ram_bytes(0, data.size()), data);
}

TEST_F(DeviceDmaTest, ScatteredVramSideIsOneTransferPerRun) {
  std::vector<uint8_t> data;
  ASSERT_NO_FATAL_FAILURE(copy_pattern_from_ram(0, SCATTER_VA, SCATTER_PAGES * fmt::SMALL_PAGE, 11, data));
  EXPECT_EQ(fake_->stats().host_to_device, SCATTER_PAGES);
  EXPECT_EQ(read_vec<uint8_t>(SCATTER_VA, data.size()), data);
  ASSERT_TRUE(send(ce_, copy(SCATTER_VA, SYS_VA + 512 * KiB, uint32_t(data.size()))).has_value());
  EXPECT_EQ(fake_->stats().device_to_host, SCATTER_PAGES);
  EXPECT_EQ(ram_bytes(512 * KiB, data.size()), data);
}

TEST_F(DeviceDmaTest, PitchCopyFromRamKeepsTheBytesBetweenLines) {
  constexpr uint32_t LINE = 1000, LINES = 8, PIN = 4096, POUT = 1024;
  const auto ram = pattern(PIN * LINES, 13);
  std::memcpy(ram_->data(), ram.data(), ram.size());
  const auto before = pattern(POUT * LINES, 17);
  write_vec(LINEAR_VA, before);
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy_2d(SYS_VA, LINEAR_VA, LINE, LINES, PIN, POUT)).has_value());
  EXPECT_EQ(fake_->stats().host_to_device, 1u);  // both sides contiguous: one 2D copy
  auto want = before;
  for (uint32_t l = 0; l < LINES; ++l) std::memcpy(&want[l * POUT], &ram[l * PIN], LINE);
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, want.size()), want);
}

TEST_F(DeviceDmaTest, PitchCopyToRamKeepsTheBytesBetweenLines) {
  constexpr uint32_t LINE = 300, LINES = 5, PIN = 512, POUT = 8192;
  const auto src = pattern(PIN * LINES, 19);
  write_vec(LINEAR_VA, src);
  const auto before = pattern(POUT * LINES, 23);
  std::memcpy(ram_->data(), before.data(), before.size());
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy_2d(LINEAR_VA, SYS_VA, LINE, LINES, PIN, POUT)).has_value());
  EXPECT_EQ(fake_->stats().device_to_host, 1u);
  auto want = before;
  for (uint32_t l = 0; l < LINES; ++l) std::memcpy(&want[l * POUT], &src[l * PIN], LINE);
  EXPECT_EQ(ram_bytes(0, want.size()), want);
}

TEST_F(DeviceDmaTest, OverlappingDestinationLinesAreCopiedLineByLineInOrder) {
  constexpr uint32_t LINE = 256, LINES = 4, PIN = 256, POUT = 128;  // each line overwrites half of the last
  const auto ram = pattern(PIN * LINES, 43);
  std::memcpy(ram_->data(), ram.data(), ram.size());
  CopyObject ce;
  ASSERT_TRUE(send(ce, copy_2d(SYS_VA, LINEAR_VA, LINE, LINES, PIN, POUT)).has_value());
  EXPECT_EQ(fake_->stats().host_to_device, LINES);
  std::vector<uint8_t> want(POUT * (LINES - 1) + LINE);
  for (uint32_t l = 0; l < LINES; ++l) std::memcpy(&want[l * POUT], &ram[l * PIN], LINE);
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, want.size()), want);
}

TEST_F(DeviceDmaTest, CopyPastRamEndFaultsDmaErrorAsOnTheModel) {
  expect_copy_past_ram_end_faults();
  EXPECT_EQ(fake_->stats().device_to_host, 0u);
}

TEST_F(DeviceDmaTest, RamToRamStaysOnTheModel) {
  std::vector<uint8_t> data;
  ASSERT_NO_FATAL_FAILURE(copy_pattern_from_ram(0, SYS_VA + 512 * KiB, 50000, 29, data));
  EXPECT_EQ(ram_bytes(512 * KiB, data.size()), data);
  EXPECT_EQ(fake_->stats().host_to_device + fake_->stats().device_to_host, 0u);
}

TEST_F(DeviceDmaTest, MemoryWithoutHostSpansStaysOnTheModel) {
  set_system_memory(std::make_shared<NoSpans>(ram_));
  std::vector<uint8_t> data;
  ASSERT_NO_FATAL_FAILURE(copy_pattern_from_ram(0, LINEAR_VA, 70000, 31, data));
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, data.size()), data);
  EXPECT_EQ(fake_->stats().host_to_device, 0u);
}

// ---------------------------------------------------------------- bus windows

class DeviceDmaBusTest : public DeviceDmaTest {
 protected:
  static constexpr uint64_t WINDOW = 16 * GiB;

  void SetUp() override {
    DeviceDmaTest::SetUp();
    ASSERT_TRUE(bus_->add(WINDOW, RAM_BYTES, ram_, 0).has_value());
    set_system_memory(bus_);
    for (uint64_t off = 0; off < RAM_BYTES; off += fmt::SMALL_PAGE)
      ASSERT_TRUE(
          builder_->set_pte(pd_, SYS_VA + off, fmt::PageSize::small, fmt::pte::make_sysmem(WINDOW + off)).has_value());
  }

  std::shared_ptr<BusMap> bus_ = std::make_shared<BusMap>();
};

TEST_F(DeviceDmaBusTest, TwoWindowsOntoOneRamRegisterItOnce) {
  ASSERT_TRUE(bus_->add(2 * WINDOW, RAM_BYTES / 2, ram_, RAM_BYTES / 2).has_value());
  EXPECT_EQ(fake_->stats().registered_mappings, 1u);
  bus_->remove(WINDOW);
  EXPECT_EQ(fake_->stats().registered_mappings, 1u);
  bus_->remove(2 * WINDOW);
  EXPECT_EQ(fake_->stats().registered_mappings, 0u);
}

TEST_F(DeviceDmaBusTest, CopyThroughAWindowIsDirect) {
  std::vector<uint8_t> data;
  ASSERT_NO_FATAL_FAILURE(copy_pattern_from_ram(4096, LINEAR_VA, 128 * KiB, 37, data));
  EXPECT_EQ(fake_->stats().host_to_device, 1u);
  EXPECT_EQ(fake_->stats().unregistered_host_copies, 0u);
  EXPECT_EQ(read_vec<uint8_t>(LINEAR_VA, data.size()), data);
}

TEST_F(DeviceDmaBusTest, RemoveWaitsForAHold) {
  auto hold = bus_->hold_host();
  ASSERT_NE(hold, nullptr);
  ASSERT_EQ(hold->span(WINDOW + 4096, 4096), ram_->data() + 4096);
  std::atomic<bool> removed{false};
  std::thread remover([&] {
    bus_->remove(WINDOW);
    removed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(removed.load());  // the window stays while DMA holds it
  hold.reset();
  remover.join();
  EXPECT_TRUE(removed.load());
  EXPECT_EQ(bus_->hold_host()->span(WINDOW + 4096, 4096), nullptr);
  EXPECT_EQ(fake_->stats().registered_mappings, 0u);
}

TEST_F(DeviceDmaBusTest, CopiesRacingRemoveCompleteOrFaultDmaError) {
  const auto data = pattern(256 * KiB, 41);
  std::memcpy(ram_->data(), data.data(), data.size());
  std::atomic<bool> go{false};
  std::thread remover([&] {
    while (!go.load()) std::this_thread::yield();
    bus_->remove(WINDOW);
  });
  CopyObject ce;
  int done = 0, faulted = 0;
  for (int i = 0; i < 200; ++i) {
    if (i == 2) go = true;
    const bool up = i % 2 == 0;
    auto r = send(ce, up ? copy(SYS_VA, LINEAR_VA, 256 * KiB) : copy(LINEAR_VA, SYS_VA + 512 * KiB, 256 * KiB));
    if (r) {
      ++done;
      continue;
    }
    ++faulted;
    ASSERT_TRUE(r.error().mmu.has_value());
    EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::dma_error);
  }
  remover.join();
  EXPECT_GE(done, 2);
  // Once the window is gone, every copy through it faults: a new range at
  // its walk, and one whose placement the device path cached before the
  // removal (no invalidate since) when its host span is looked up.
  for (uint32_t bytes : {4096u, uint32_t(256 * KiB)}) {
    auto r = send(ce, copy(SYS_VA, LINEAR_VA, bytes));
    ASSERT_FALSE(r.has_value());
    ASSERT_TRUE(r.error().mmu.has_value());
    EXPECT_EQ(r.error().mmu->reason, regs::FaultReason::dma_error);
  }
  EXPECT_EQ(fake_->stats().registered_mappings, 0u);
  EXPECT_EQ(fake_->stats().unregistered_host_copies, 0u);
}

}  // namespace
}  // namespace vgpu::gpu
