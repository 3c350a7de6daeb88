// SPDX-License-Identifier: GPL-2.0-or-later
// End-to-end: the driver on the software GPU model through the native port.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "common/random.h"
#include "driver/native_port.h"
#include "driver/runtime.h"
#include "gpu/gpu.h"
#include "gpu/kernels/reference.h"
#include "vgpu/regs.h"

namespace vgpu::driver {
namespace {

namespace ref = gpu::kernels::reference;


void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "at " << i;
}

struct Native : ::testing::Test {
  void SetUp() override { open({}); }
  void open(DeviceOptions options, bool direct_maps = true) {
    close();
    auto g = gpu::Gpu::create({.vram_bytes = 128 * MiB});
    ASSERT_TRUE(g) << g.error().what();
    gpu = std::move(*g);
    auto p = NativePort::create(*gpu, direct_maps);
    ASSERT_TRUE(p) << p.error().what();
    port = std::move(*p);
    auto d = Device::open(*port, options);
    ASSERT_TRUE(d) << d.error().what();
    dev = std::move(*d);
    auto c = dev->create_context();
    ASSERT_TRUE(c) << c.error().what();
    ctx = std::move(*c);
  }
  void TearDown() override { close(); }
  // Each goes before what it was opened on.
  void close() {
    ctx.reset();
    dev.reset();
    port.reset();
    gpu.reset();
  }
  Buffer upload(const std::vector<float>& v) {
    auto b = ctx->alloc(v.size() * sizeof(float));
    EXPECT_TRUE(b) << b.error().what();
    auto ok = ctx->upload(*b, std::span<const float>(v));
    EXPECT_TRUE(ok) << ok.error().what();
    return *b;
  }
  std::vector<float> download(Buffer b, size_t n) {
    std::vector<float> v(n);
    auto ok = ctx->download(b, std::span<float>(v));
    EXPECT_TRUE(ok) << ok.error().what();
    return v;
  }
  // saxpy on addresses nothing maps: the engine faults, the channel stops.
  Result<Fence> launch_unmapped_saxpy() {
    const cls::SaxpyArgs args{0x1000, 0x2000, 64, 1.0f};
    return ctx->launch(cls::Kernel::saxpy, std::as_bytes(std::span(&args, 1)), {});
  }
  void run(Result<Fence> f) {
    ASSERT_TRUE(f) << f.error().what();
    auto ok = ctx->wait(*f);
    ASSERT_TRUE(ok) << ok.error().what();
  }

  std::unique_ptr<gpu::Gpu> gpu;
  std::unique_ptr<NativePort> port;
  std::unique_ptr<Device> dev;
  std::unique_ptr<Context> ctx;
};

TEST_F(Native, OpenFindsGf100AndVramSize) {
  EXPECT_EQ(dev->info().chipset, regs::CHIPSET_GF100);
  EXPECT_EQ(dev->vram_bytes(), 128 * MiB);
}

TEST_F(Native, Bar3MapsInstanceMemoryAfterBootstrap) {
  EXPECT_TRUE(regs::pbus::BarInstMode::get(port->read32(Bar::bar0, regs::pbus::BAR3_INST.offset)));
  EXPECT_TRUE(regs::pbus::BarInstMode::get(port->read32(Bar::bar0, regs::pbus::BAR1_INST.offset)));
  EXPECT_GT(dev->inst_stats().bar3_accesses, 0u);
  EXPECT_TRUE(gpu->bar_translate(gpu::Bar::bar3, 0).has_value());
}

TEST_F(Native, TimerAdvances) {
  const uint64_t a = dev->time_ns();
  gpu->clock().sleep_ns(1000);
  EXPECT_GT(dev->time_ns(), a);
}

TEST_F(Native, DirectUploadDownloadRoundTrip) {
  auto v = random_floats(3000, 1);
  Buffer b = upload(v);
  EXPECT_EQ(download(b, v.size()), v);
  EXPECT_GT(ctx->transfer_stats().direct_bytes, 0u);
  EXPECT_EQ(ctx->transfer_stats().staged_bytes, 0u);
}

TEST_F(Native, StagedUploadDownloadRoundTripThroughCopyEngine) {
  open({.direct_transfer_max = 0, .staging_bytes = 16 * KiB});
  auto v = random_floats(20000, 2);  // 80 KB: several staging chunks
  Buffer b = upload(v);
  EXPECT_EQ(download(b, v.size()), v);
  EXPECT_EQ(ctx->transfer_stats().direct_bytes, 0u);
  EXPECT_EQ(ctx->transfer_stats().staged_bytes, 2 * v.size() * sizeof(float));
}

TEST_F(Native, Word32PathWhenPortGivesNoMappings) {
  open({}, false);
  auto v = random_floats(257, 3);
  Buffer b = upload(v);
  EXPECT_EQ(download(b, v.size()), v);
  // Unaligned partial words go through read-modify-write.
  const std::byte three[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  ASSERT_TRUE(ctx->upload(b, 5, three));
  std::byte back[3];
  ASSERT_TRUE(ctx->download(b, 5, back));
  EXPECT_EQ(back[2], std::byte{3});
}

TEST_F(Native, CopyBetweenBuffers) {
  auto v = random_floats(5000, 4);
  Buffer a = upload(v);
  auto b = ctx->alloc(v.size() * sizeof(float));
  ASSERT_TRUE(b);
  run(ctx->copy(*b, 0, a, 0, v.size() * sizeof(float)));
  EXPECT_EQ(download(*b, v.size()), v);
}

TEST_F(Native, FillMatchesReference) {
  auto b = ctx->alloc(1000 * sizeof(float));
  ASSERT_TRUE(b);
  run(ctx->fill({*b, 1000, 2.5f}));
  std::vector<float> want(1000);
  ref::fill(want, 2.5f);
  EXPECT_EQ(download(*b, 1000), want);
}

TEST_F(Native, SaxpyMatchesReference) {
  auto x = random_floats(4096, 5), y = random_floats(4096, 6);
  Buffer bx = upload(x), by = upload(y);
  run(ctx->saxpy({bx, by, 4096, 0.75f}));
  ref::saxpy(0.75f, x, y);
  expect_near(download(by, y.size()), y, 1e-6f);
}

TEST_F(Native, MaddMatchesReference) {
  auto a = random_floats(64 * 48, 7), b = random_floats(64 * 48, 8);
  Buffer ba = upload(a), bb = upload(b);
  auto bc = ctx->alloc(a.size() * sizeof(float));
  ASSERT_TRUE(bc);
  run(ctx->madd({ba, bb, *bc, 64, 48}));
  std::vector<float> want(a.size());
  ref::madd(a, b, want);
  expect_near(download(*bc, a.size()), want, 1e-6f);
}

TEST_F(Native, SgemmMatchesReference) {
  const uint32_t m = 96, n = 80, k = 64;
  auto a = random_floats(m * k, 9), b = random_floats(k * n, 10), c = random_floats(m * n, 11);
  Buffer ba = upload(a), bb = upload(b), bc = upload(c);
  run(ctx->sgemm({ba, bb, bc, m, n, k, 1.5f, 0.5f}));
  ref::sgemm(cls::SgemmArgs{0, 0, 0, m, n, k, 1.5f, 0.5f, 0}, a.data(), b.data(), c.data());
  expect_near(download(bc, c.size()), c, 1e-4f);
}

TEST_F(Native, Conv2dMatchesReference) {
  Conv2dParams p{.n = 2, .c = 3, .h = 16, .w = 16, .k = 4, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  auto in = random_floats(2 * 3 * 16 * 16, 12), filt = random_floats(4 * 3 * 3 * 3, 13);
  const size_t out_n = 2 * 4 * 16 * 16;
  p.input = upload(in);
  p.filter = upload(filt);
  auto out = ctx->alloc(out_n * sizeof(float));
  ASSERT_TRUE(out);
  p.output = *out;
  run(ctx->conv2d(p));
  std::vector<float> want(out_n);
  ref::conv2d(cls::Conv2dArgs{0, 0, 0, 2, 3, 16, 16, 4, 3, 3, 1, 1, 1, 1, 0}, in.data(), filt.data(), want.data());
  expect_near(download(*out, out_n), want, 1e-4f);
}

TEST_F(Native, MriqMatchesReference) {
  const uint32_t nk = 64, nx = 128;
  auto kx = random_floats(nk, 14), ky = random_floats(nk, 15), kz = random_floats(nk, 16), phi = random_floats(nk, 17);
  auto x = random_floats(nx, 18), y = random_floats(nx, 19), z = random_floats(nx, 20);
  MriqParams p{upload(kx), upload(ky), upload(kz), upload(phi), upload(x), upload(y), upload(z), {}, {}, nk, nx};
  auto qr = ctx->alloc(nx * sizeof(float)), qi = ctx->alloc(nx * sizeof(float));
  ASSERT_TRUE(qr && qi);
  p.qr = *qr;
  p.qi = *qi;
  run(ctx->mriq(p));
  std::vector<float> wr(nx), wi(nx);
  ref::mriq(nk, nx, kx.data(), ky.data(), kz.data(), phi.data(), x.data(), y.data(), z.data(), wr.data(), wi.data());
  expect_near(download(*qr, nx), wr, 1e-3f);
  expect_near(download(*qi, nx), wi, 1e-3f);
}

TEST_F(Native, SpinCompletes) { run(ctx->spin({100'000})); }

TEST_F(Native, FenceWaitTimesOut) {
  auto f = ctx->spin({300'000'000});  // 300 ms on the real clock
  ASSERT_TRUE(f);
  auto r = ctx->wait(*f, 1'000'000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timeout);
  EXPECT_NE(r.error().message.find("channel"), std::string::npos);
  EXPECT_TRUE(ctx->wait(*f));
}

TEST_F(Native, AllocationBeyondVramIsOutOfMemory) {
  auto b = ctx->alloc(256 * MiB);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, Errc::out_of_memory);
  EXPECT_NE(b.error().message.find("134217728"), std::string::npos);  // the VRAM size
}

TEST_F(Native, FreedBufferIsNotFound) {
  auto b = ctx->alloc(4096);
  ASSERT_TRUE(b);
  ASSERT_TRUE(ctx->free(*b));
  auto r = ctx->fill({*b, 16, 1.0f});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_NE(r.error().message.find("buffer " + std::to_string(b->id)), std::string::npos);
  EXPECT_EQ(ctx->free(*b).error().code, Errc::not_found);
}

TEST_F(Native, UnknownHandleIsInvalid) {
  EXPECT_EQ(ctx->size(Buffer{999}).error().code, Errc::invalid_argument);
  EXPECT_EQ(ctx->size(Buffer{}).error().code, Errc::invalid_argument);
}

TEST_F(Native, KernelBeyondBufferIsInvalid) {
  auto b = ctx->alloc(64);
  ASSERT_TRUE(b);
  auto r = ctx->fill({*b, 1000, 1.0f});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
}

// Transfers and copies lie inside their buffers: the last bytes fit, one
// more is refused, and an offset near 2^64 does not wrap around.
TEST_F(Native, TransfersBeyondABufferAreInvalid) {
  auto a = ctx->alloc(256), b = ctx->alloc(256);
  ASSERT_TRUE(a && b);
  auto size = ctx->size(*a);
  ASSERT_TRUE(size);
  const uint64_t n = *size;
  const auto invalid = [](const auto& r) { return !r && r.error().code == Errc::invalid_argument; };
  std::vector<std::byte> host(8);
  EXPECT_TRUE(ctx->upload(*a, n - 8, host));
  EXPECT_TRUE(invalid(ctx->upload(*a, n - 7, host)));
  EXPECT_TRUE(invalid(ctx->upload(*a, ~uint64_t{0} - 3, host)));
  EXPECT_TRUE(ctx->download(*a, n - 8, host));
  EXPECT_TRUE(invalid(ctx->download(*a, n + 1, std::span<std::byte>{})));
  run(ctx->copy(*b, 0, *a, 0, n));
  EXPECT_TRUE(invalid(ctx->copy(*b, 1, *a, 0, n)));
  EXPECT_TRUE(invalid(ctx->copy(*b, 0, *a, 1, n)));
}

TEST_F(Native, ChannelErrorEndsWaitAndLaterLaunches) {
  auto f = launch_unmapped_saxpy();
  ASSERT_TRUE(f);
  auto r = ctx->wait(*f);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::device_error);
  EXPECT_NE(r.error().message.find("channel " + std::to_string(ctx->channel_id())), std::string::npos);
  EXPECT_NE(r.error().message.find("code"), std::string::npos);
  auto later = ctx->spin({1000});
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code, Errc::device_error);
}

TEST_F(Native, ChannelIdReusedAfterAnErrorStartsClean) {
  auto f = launch_unmapped_saxpy();
  ASSERT_TRUE(f);
  ASSERT_FALSE(ctx->wait(*f));
  const uint32_t chid = ctx->channel_id();
  ctx.reset();
  auto c = dev->create_context();
  ASSERT_TRUE(c) << c.error().what();
  ctx = std::move(*c);
  ASSERT_EQ(ctx->channel_id(), chid);
  run(ctx->spin({1000}));
}

TEST_F(Native, ContextsAreIndependent) {
  auto other = dev->create_context();
  ASSERT_TRUE(other) << other.error().what();
  EXPECT_NE((*other)->channel_id(), ctx->channel_id());
  auto b = (*other)->alloc(256 * sizeof(float));
  ASSERT_TRUE(b);
  auto f = (*other)->fill({*b, 256, 7.0f});
  ASSERT_TRUE(f);
  ASSERT_TRUE((*other)->wait(*f));
  run(ctx->spin({1000}));
}

}  // namespace
}  // namespace vgpu::driver
