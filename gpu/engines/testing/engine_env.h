// SPDX-License-Identifier: GPL-2.0-or-later
// A small GPU address space for class-object tests: VRAM with Fermi page
// tables (gpu/mem PageTableBuilder), an MMU, a virtual clock and a channel
// context that counts its interrupts and semaphore wake-ups. Methods are fed
// straight to an object; engine work runs inline.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "gpu/device/backend.h"
#include "gpu/engines/class_object.h"
#include "gpu/engines/device_work.h"
#include "gpu/mem/mmu.h"
#include "gpu/mem/page_table_builder.h"
#include "gpu/mem/vram.h"
#include "vgpu/bits.h"
#include "vgpu/formats.h"

namespace vgpu::gpu::testing {

struct Method {
  uint32_t mthd;
  uint32_t data;
};

class EngineEnv : public ::testing::Test {
 protected:
  static constexpr uint64_t VRAM_BYTES = 16 * MiB;
  static constexpr uint64_t TABLES_END = 2 * MiB;  // page tables in [0, 2 MiB)
  static constexpr uint64_t DATA_PHYS = 4 * MiB;   // the linear region's backing
  static constexpr uint64_t DATA_BYTES = 4 * MiB;
  static constexpr uint64_t SCATTER_PHYS = 12 * MiB;  // the scattered region's backing
  static constexpr uint64_t SCATTER_PAGES = 16;
  static constexpr uint32_t CHID = 5;

  // GPU VAs above 4 GiB, so that every *_UPPER method matters.
  static constexpr uint64_t LINEAR_VA = 0x12'3400'0000;   // physically contiguous
  static constexpr uint64_t SCATTER_VA = 0x20'0000'0000;  // pages in reverse physical order
  static constexpr uint64_t UNMAPPED_VA = 0x30'0000'0000;

  void SetUp() override {
    auto vram = Vram::create(VRAM_BYTES);
    ASSERT_TRUE(vram.has_value()) << vram.error().what();
    vram_ = std::move(*vram);
    builder_ = std::make_unique<PageTableBuilder>(*vram_, 0, TABLES_END);
    auto pd = builder_->create_pd();
    ASSERT_TRUE(pd.has_value()) << pd.error().what();
    pd_ = *pd;
    ASSERT_TRUE(builder_->map(pd_, LINEAR_VA, DATA_PHYS, DATA_BYTES, fmt::PageSize::small).has_value());
    for (uint64_t i = 0; i < SCATTER_PAGES; ++i) {
      const uint64_t phys = SCATTER_PHYS + (SCATTER_PAGES - 1 - i) * fmt::SMALL_PAGE;
      ASSERT_TRUE(builder_->map(pd_, SCATTER_VA + i * fmt::SMALL_PAGE, phys, fmt::SMALL_PAGE, fmt::PageSize::small)
                      .has_value());
    }
    mmu_ = std::make_unique<Mmu>(*vram_);
    // VGPU_ENGINE_BACKEND=fake_device or cuda: the same tests through the
    // device path (docs/cuda.md).
    auto backend = effective_engine_backend(EngineBackend::model);
    ASSERT_TRUE(backend.has_value()) << backend.error().what();
    auto device = make_device(*backend, *vram_);
    ASSERT_TRUE(device.has_value()) << device.error().what();
    use_device(std::move(*device));
  }
  void TearDown() override {
    if (device_ && mmu_) mmu_->system_memory()->detach(*device_);
    if (vram_) vram_->set_observer(nullptr);
  }

  // Engine work runs on `device` from now on (none: the model's engines),
  // with a fresh residency tracker (all pages valid on the host).
  void use_device(std::unique_ptr<Device> device) {
    if (device_) mmu_->system_memory()->detach(*device_);
    vram_->set_observer(nullptr);
    device_engines_.reset();
    residency_.reset();
    device_ = std::move(device);
    if (device_) {
      residency_ = std::make_unique<ResidencyTracker>(vram_->size(), *device_, &vram_->dirty_log());
      device_engines_ = std::make_unique<DeviceEngines>(*device_, *residency_);
      vram_->set_observer(residency_.get());
      mmu_->system_memory()->attach(*device_);
    }
  }

  // The system memory sysmem PTEs reach, registered with the device as
  // GpuModel::set_system_memory does.
  void set_system_memory(std::shared_ptr<SystemMemory> memory) {
    std::shared_ptr<SystemMemory> old = mmu_->system_memory();
    if (device_ && memory) memory->attach(*device_);
    mmu_->set_system_memory(std::move(memory));
    if (device_) old->detach(*device_);
  }

  AccessContext address_space() const {
    return AccessContext{
        .pdb = pd_, .limit = fmt::VA_LIMIT - 1, .unit = regs::FaultUnit::pfifo, .inst = 0, .chid = CHID, .priv = false};
  }

  ChannelContext context() {
    return ChannelContext{
        .chid = CHID,
        .as = address_space(),
        .mmu = *mmu_,
        .clock = real_time_ ? static_cast<Clock&>(real_clock_) : clock_,
        .cost = cost_,
        .nonstall = [this] { ++nonstalls_; },
        .semaphore_written = [this] { ++semaphore_writes_; },
        .engine_budget_ns = engine_budget_ns_,
        .slice_blocks = slice_blocks_,
        .slice_ns = slice_ns_,
        .slice_yield = slice_yield_,
        .device = device_engines_.get(),
    };
  }

  // Feed methods in order, running engine work inline; stop at the first fault.
  MethodDone send(ClassObject& object, std::initializer_list<Method> methods) {
    return send(object, std::vector<Method>(methods));
  }
  MethodDone send(ClassObject& object, const std::vector<Method>& methods) {
    ChannelContext ctx = context();
    for (const Method& m : methods) {
      MethodOutcome out = object.method(ctx, m.mthd, m.data);
      if (!out) return std::unexpected(out.error());
      if (*out && (*out)->divided) {  // a sliced launch: its pieces in turn, as PFIFO runs them
        DividedWork& work = *(*out)->divided;
        do {
          if (auto done = work.run_piece(engine_budget_ns_); !done) return done;
          ++pieces_;
        } while (!work.finished());
        ++engine_runs_;
      } else if (*out) {
        if (auto done = (*out)->run(); !done) return done;
        ++engine_runs_;
      }
    }
    return {};
  }

  void write(uint64_t va, const void* src, uint64_t len) {
    ASSERT_TRUE(mmu_->write(address_space(), va, src, len).has_value()) << "write at " << va;
  }
  template <typename T>
  void write_vec(uint64_t va, const std::vector<T>& v) {
    write(va, v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> read_vec(uint64_t va, size_t count) {
    std::vector<T> v(count);
    EXPECT_TRUE(mmu_->read(address_space(), va, v.data(), count * sizeof(T)).has_value()) << "read at " << va;
    return v;
  }
  uint32_t read32(uint64_t va) {
    auto r = mmu_->read32(address_space(), va);
    EXPECT_TRUE(r.has_value());
    return r.value_or(0);
  }

  std::unique_ptr<Vram> vram_;
  std::unique_ptr<PageTableBuilder> builder_;
  std::unique_ptr<Mmu> mmu_;
  std::unique_ptr<Device> device_;  // none: the model's engines
  std::unique_ptr<ResidencyTracker> residency_;
  std::unique_ptr<DeviceEngines> device_engines_;
  uint64_t pd_ = 0;
  VirtualClock clock_;
  RealClock real_clock_;
  bool real_time_ = false;                              // the methods sent run on real_clock_ instead
  std::optional<uint64_t> engine_budget_ns_;            // ENGINE_TIMEOUT's budget for the methods sent
  uint32_t slice_blocks_ = 0;                           // CHAN_SLICE blocks for the methods sent
  uint64_t slice_ns_ = 0;                               // a timed CHAN_SLICE's time for the methods sent
  const std::atomic<uint32_t>* slice_yield_ = nullptr;  // an on-demand CHAN_SLICE's SLICE_YIELD
  kernels::CostModel cost_;
  int nonstalls_ = 0;
  int semaphore_writes_ = 0;
  int engine_runs_ = 0;
  int pieces_ = 0;  // pieces of sliced launches run
};

// A byte pattern that differs at every offset in a page and across pages.
inline std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + i / 4096 * 7 + seed) & 0xff);
  return v;
}

}  // namespace vgpu::gpu::testing
