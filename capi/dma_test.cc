// SPDX-License-Identifier: GPL-2.0-or-later
// System memory through the C API, as QEMU's hw/vgpu uses it: the front
// end's DMA callback over "guest RAM" (a vector here, pci_dma_* in QEMU),
// the unchanged driver pinning pages of it, in passthrough and fv modes.
// In fv mode the mediator confines DMA to the RAM ranges the front end
// reports, whatever the guest's PTEs say. And the turn hook, seen from
// the same front end: the unchanged driver's work makes the VM's turns.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "capi/testing/trapped_port.h"
#include "capi/vgpu_capi.h"
#include "driver/pinned_ram.h"
#include "driver/runtime.h"

namespace vgpu {
namespace {

constexpr uint64_t RAM_BASE = 1 * GiB;  // guest-physical start of the RAM the guest pins from
constexpr uint64_t RAM_BYTES = 16 * MiB;

// Guest RAM at [RAM_BASE, RAM_BASE + RAM_BYTES), reached by the callback.
struct Ram {
  std::vector<std::byte> bytes = std::vector<std::byte>(RAM_BYTES);
  uint64_t calls = 0;
  static int dma(void* opaque, uint64_t addr, void* buf, uint64_t len, VgpuDmaOp op) {
    auto* r = static_cast<Ram*>(opaque);
    ++r->calls;
    if (addr < RAM_BASE || addr - RAM_BASE > RAM_BYTES || len > RAM_BYTES - (addr - RAM_BASE)) return -1;
    std::byte* at = r->bytes.data() + (addr - RAM_BASE);
    if (op == VGPU_DMA_READ) std::memcpy(buf, at, len);
    if (op == VGPU_DMA_WRITE) std::memcpy(at, buf, len);
    return 0;
  }
};

// The driver's port onto a C API backend: every access trapped, pages
// pinned from `ram`.
class CapiPort final : public capi::testing::TrappedPort {
 public:
  CapiPort(VgpuBackend* b, Ram& ram) : TrappedPort(b), pinned_(std::span(ram.bytes), RAM_BASE) {}
  std::string name() const override { return "capi"; }
  Result<driver::PinnedPages> pin(uint64_t bytes) override { return pinned_.pin(bytes); }
  void unpin(std::span<std::byte> host) override { pinned_.unpin(host); }

 private:
  driver::PinnedRam pinned_;
};

struct Destroy {
  void operator()(VgpuBackend* b) const { vgpu_backend_destroy(b); }
};

std::unique_ptr<VgpuBackend, Destroy> backend(VgpuMode mode, VgpuTurnFn turn = nullptr, void* turn_opaque = nullptr) {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);
  c.vram_bytes = 64 * MiB;
  c.channels = 8;
  c.mode = mode;
  c.bar_remap = false;
  c.scheduler = "fifo";
  c.weight = 1;
  c.turn = turn;
  c.turn_opaque = turn_opaque;
  char err[256] = {};
  std::unique_ptr<VgpuBackend, Destroy> b(vgpu_backend_create(&c, err, sizeof err));
  EXPECT_NE(b, nullptr) << err;
  return b;
}

// The front end's DMA hook and all of `ram` as the guest's RAM.
[[nodiscard]] bool attach_ram(VgpuBackend* b, Ram& ram) {
  vgpu_backend_set_dma(b, &Ram::dma, &ram);
  const VgpuRamRange range{RAM_BASE, RAM_BYTES};
  char err[256] = {};
  const int rc = vgpu_backend_set_guest_ram(b, &range, 1, err, sizeof err);
  EXPECT_EQ(rc, 0) << err;
  return rc == 0;
}

// The guest driver over a backend through a CapiPort on `ram`, with one context.
struct Guest {
  Guest(VgpuBackend* b, Ram& ram) : port(b, ram) {}
  CapiPort port;
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
};
void open_guest(Guest& g) {
  auto dev = driver::Device::open(g.port);
  ASSERT_TRUE(dev) << dev.error().what();
  g.dev = std::move(*dev);
  auto ctx = g.dev->create_context();
  ASSERT_TRUE(ctx) << ctx.error().what();
  g.ctx = std::move(*ctx);
}

class CapiDma : public ::testing::TestWithParam<VgpuMode> {};

TEST_P(CapiDma, PinnedRoundTripReachesTheFrontEndsMemory) {
  Ram ram;
  auto b = backend(GetParam());
  ASSERT_TRUE(b);
  ASSERT_TRUE(attach_ram(b.get(), ram));
  Guest g(b.get(), ram);
  ASSERT_NO_FATAL_FAILURE(open_guest(g));
  driver::Context& c = *g.ctx;
  constexpr uint64_t BYTES = 2 * MiB;
  auto pinned = c.alloc_host(BYTES);
  ASSERT_TRUE(pinned) << pinned.error().what();
  auto dev_buf = c.alloc(BYTES);
  ASSERT_TRUE(dev_buf);
  auto host = c.host_data(*pinned);
  ASSERT_TRUE(host);
  for (uint64_t i = 0; i < BYTES; ++i) (*host)[i] = std::byte(i * 13);
  ASSERT_TRUE(c.upload_pinned(*dev_buf, 0, *pinned, 0, BYTES));
  std::memset(host->data(), 0, BYTES);
  ASSERT_TRUE(c.download_pinned(*pinned, 0, *dev_buf, 0, BYTES));
  for (uint64_t i = 0; i < BYTES; ++i) ASSERT_EQ((*host)[i], std::byte(i * 13)) << i;
  EXPECT_GT(ram.calls, 0u);
}

// fv: the guest's PTE names RAM the front end reaches (its callback would
// serve it) but the hypervisor never reported: the mediator refuses it.
TEST(CapiDmaFv, RamTheFrontEndDidNotReportIsRefused) {
  Ram ram;
  auto b = backend(VGPU_MODE_FV);
  ASSERT_TRUE(b);
  vgpu_backend_set_dma(b.get(), &Ram::dma, &ram);
  const VgpuRamRange half{RAM_BASE, RAM_BYTES / 2};  // the pinned pages come from the start: allowed
  char err[256] = {};
  ASSERT_EQ(vgpu_backend_set_guest_ram(b.get(), &half, 1, err, sizeof err), 0) << err;
  Guest g(b.get(), ram);
  ASSERT_NO_FATAL_FAILURE(open_guest(g));
  driver::Context& c = *g.ctx;
  auto inside = c.alloc_host(RAM_BYTES / 2);   // the reported half
  auto outside = c.alloc_host(RAM_BYTES / 4);  // the unreported half
  ASSERT_TRUE(inside && outside);
  auto dev_buf = c.alloc(RAM_BYTES / 4);
  ASSERT_TRUE(dev_buf);
  ASSERT_TRUE(c.upload_pinned(*dev_buf, 0, *inside, 0, RAM_BYTES / 4));
  auto bad = c.download_pinned(*outside, 0, *dev_buf, 0, RAM_BYTES / 4);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::device_error) << bad.error().what();
  EXPECT_TRUE(
      std::all_of(ram.bytes.begin() + RAM_BYTES / 2, ram.bytes.end(), [](std::byte x) { return x == std::byte{0}; }));
}

TEST(CapiDmaFv, BadRangesAreRefusedWithAMessage) {
  auto b = backend(VGPU_MODE_FV);
  ASSERT_TRUE(b);
  Ram ram;
  vgpu_backend_set_dma(b.get(), &Ram::dma, &ram);
  const VgpuRamRange odd{RAM_BASE + 1, 4096};
  char err[256] = {};
  EXPECT_EQ(vgpu_backend_set_guest_ram(b.get(), &odd, 1, err, sizeof err), -1);
  EXPECT_NE(std::string(err).find("guest RAM"), std::string::npos) << err;
}

// What a VgpuTurnFn heard, from backend threads.
struct Turns {
  struct Event {
    bool start;
    VgpuTurnEnd end;
    uint64_t gpu_ns;
  };
  std::mutex mu;
  std::vector<Event> events;
  static void fn(void* opaque, bool start, VgpuTurnEnd end, uint64_t gpu_ns) {
    auto* t = static_cast<Turns*>(opaque);
    std::lock_guard lock(t->mu);
    t->events.push_back({start, end, gpu_ns});
  }
  bool last_is_end() {
    std::lock_guard lock(mu);
    return !events.empty() && !events.back().start;
  }
};

// fv, embedded: the copies of an upload and a download are turns of this
// VM, each start before its end; a second vGPU that did nothing hears
// nothing. Passthrough has no turns.
TEST(CapiTurns, TheVmsWorkIsTurnsStartThenEndAndOnlyItsOwn) {
  for (VgpuMode mode : {VGPU_MODE_FV, VGPU_MODE_PASSTHROUGH}) {
    Ram ram;
    Turns mine, idle;
    auto b = backend(mode, &Turns::fn, &mine);
    auto other = backend(mode, &Turns::fn, &idle);
    ASSERT_TRUE(b && other);
    ASSERT_TRUE(attach_ram(b.get(), ram));
    Guest g(b.get(), ram);
    ASSERT_NO_FATAL_FAILURE(open_guest(g));
    constexpr uint64_t BYTES = 64 * KiB;
    auto pinned = g.ctx->alloc_host(BYTES);
    auto dev_buf = g.ctx->alloc(BYTES);
    ASSERT_TRUE(pinned && dev_buf);
    ASSERT_TRUE(g.ctx->upload_pinned(*dev_buf, 0, *pinned, 0, BYTES));
    ASSERT_TRUE(g.ctx->download_pinned(*pinned, 0, *dev_buf, 0, BYTES));
    if (mode == VGPU_MODE_PASSTHROUGH) {
      std::lock_guard lock(mine.mu);
      EXPECT_TRUE(mine.events.empty());
      continue;
    }
    // The last turn may end just after the fence the driver waited for.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!mine.last_is_end() && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(mine.mu);
    ASSERT_GE(mine.events.size(), 2u);
    uint64_t gpu_ns = 0;
    for (size_t i = 0; i < mine.events.size(); ++i) {
      ASSERT_EQ(mine.events[i].start, i % 2 == 0) << "event " << i;
      if (!mine.events[i].start) {
        gpu_ns += mine.events[i].gpu_ns;
        EXPECT_STRNE(vgpu_turn_end_name(mine.events[i].end), "?");
      }
    }
    EXPECT_FALSE(mine.events.back().start);
    EXPECT_GT(gpu_ns, 0u);
    std::lock_guard other_lock(idle.mu);
    EXPECT_TRUE(idle.events.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CapiDma, ::testing::Values(VGPU_MODE_PASSTHROUGH, VGPU_MODE_FV),
                         [](const ::testing::TestParamInfo<VgpuMode>& p) {
                           return p.param == VGPU_MODE_FV ? std::string("fv") : std::string("passthrough");
                         });

}  // namespace
}  // namespace vgpu
