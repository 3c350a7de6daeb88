// SPDX-License-Identifier: GPL-2.0-or-later
// The built-in kernels in the per-VM worker (builtin.h): each through
// WorkerGpuDevice gives the model's result (gpu/kernels on the same
// inputs): bit for bit on the fake device, which runs the model's own
// kernels; within the workloads' float tolerances on the GPU
// (VGPU_WORKER_TEST_DEVICE=cuda, with VGPU_WORKER_TEST_BINARY the staged
// vgpu-worker), where the worst scaled error is printed. A bad argument
// block or a buffer outside the VM's part is a defined error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include "gpu/kernels/kernels.h"
#include "worker/builtin.h"
#include "worker/gpu_device.h"
#include "worker/testing/floats.h"
#include "worker/testing/saxpy_madd.h"
#include "worker/testing/test_worker.h"

namespace vgpu::worker {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t PART = 8 * BLOCK_BYTES;  // the VM's VRAM; a second VM's part follows
constexpr uint32_t S = 5;                   // the VM's channel
using testing::ABS_TOL;
using testing::random_floats;
using testing::REL_TOL;
using testing::test_binary;
using testing::test_device;

std::vector<float> magnitudes(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

// One VM on a worker, and its VRAM handed out from just below the first
// block boundary, so that buffers straddle blocks.
struct Bed {
  std::unique_ptr<gpu::Vram> vram;
  std::unique_ptr<WorkerGpuDevice> dev;
  uint64_t next = BLOCK_BYTES - 4096;

  uint64_t put(const std::vector<float>& v) {
    const uint64_t at = next;
    std::memcpy(vram->data() + at, v.data(), v.size() * sizeof(float));
    dev->upload(at, v.size() * sizeof(float));
    next += (v.size() * sizeof(float) + 255) / 256 * 256;
    return at;
  }
  float* ptr(uint64_t phys) { return reinterpret_cast<float*>(dev->mirror(phys)); }
  std::vector<float> get(uint64_t at, size_t n) {
    dev->download(at, n * sizeof(float));
    std::vector<float> v(n);
    std::memcpy(v.data(), vram->data() + at, n * sizeof(float));
    return v;
  }
};

Bed make() {
  Bed b;
  auto v = gpu::Vram::create(2 * PART);
  EXPECT_TRUE(v);
  b.vram = std::move(*v);
  WorkerOptions o;
  o.binary = test_binary();
  o.device = test_device();
  auto d = WorkerGpuDevice::create(*b.vram, o, {{0, PART}, {PART, PART}}, 20s);
  EXPECT_TRUE(d) << d.error().what();
  if (d) {
    b.dev = std::move(*d);
    b.dev->assign(S, 0);
  }
  return b;
}

// The fake device runs the model's kernels: the same bits. The GPU: each
// element within REL_TOL of its terms' magnitudes (`scale`) plus ABS_TOL.
void expect_model(const char* kernel, const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<float>& scale) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double{got[i]} - want[i]) / (REL_TOL * scale[i] + ABS_TOL);
    worst = std::max(worst, err);
    bad += !(err <= 1.0);  // NaN counts as wrong
  }
  std::printf("%s on %s: %zu outputs, worst error %.3g of the tolerance\n", kernel, test_device().c_str(), got.size(),
              worst);
  if (test_device() == "fake")
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << kernel;
  else
    EXPECT_EQ(bad, 0u) << kernel << ": worst " << worst << " of the tolerance";
}

TEST(WorkerBuiltins, SaxpyAndMaddGiveTheModelsResult) {
  Bed b = make();
  ASSERT_TRUE(b.dev);
  constexpr size_t N = 300'000;  // 1.2 MB a vector: each straddles a block
  const auto x = random_floats(N, 1), y = random_floats(N, 2);
  const uint64_t px = b.put(x), py = b.put(y), pc = b.put(std::vector<float>(N, 7.f));
  b.dev->saxpy(S, 2.5f, b.ptr(px), b.ptr(py), N);
  b.dev->madd(S, b.ptr(px), b.ptr(py), b.ptr(pc), N);  // after saxpy: x + (2.5 x + y)
  ASSERT_TRUE(b.dev->synchronize(S));
  const auto want = testing::saxpy_then_madd(2.5f, x, y);
  expect_model("saxpy", b.get(py, N), want.y, want.scale_y);
  expect_model("madd", b.get(pc, N), want.c, want.scale_c);
}

TEST(WorkerBuiltins, SgemmGivesTheModelsResult) {
  Bed b = make();
  ASSERT_TRUE(b.dev);
  cls::SgemmArgs g{};
  g.m = 200, g.n = 300, g.k = 500, g.alpha = 1.5f, g.beta = -0.5f;
  const auto a = random_floats(size_t{g.m} * g.k, 3), bm = random_floats(size_t{g.k} * g.n, 4),
             c = random_floats(size_t{g.m} * g.n, 5);
  const uint64_t pa = b.put(a), pb = b.put(bm), pc = b.put(c);
  b.dev->sgemm(S, g, b.ptr(pa), b.ptr(pb), b.ptr(pc));
  ASSERT_TRUE(b.dev->synchronize(S));
  std::vector<float> want = c, scale = magnitudes(c);
  gpu::kernels::sgemm(g, a.data(), bm.data(), want.data());
  cls::SgemmArgs gs = g;
  gs.alpha = std::fabs(g.alpha), gs.beta = std::fabs(g.beta);
  gpu::kernels::sgemm(gs, magnitudes(a).data(), magnitudes(bm).data(), scale.data());
  expect_model("sgemm", b.get(pc, c.size()), want, scale);
}

TEST(WorkerBuiltins, Conv2dGivesTheModelsResult) {
  Bed b = make();
  ASSERT_TRUE(b.dev);
  cls::Conv2dArgs g{};
  g.n = 2, g.c = 8, g.h = 30, g.w = 28, g.k = 16, g.r = 3, g.s = 3, g.pad_h = 1, g.pad_w = 0, g.stride_h = 1,
  g.stride_w = 2;
  const uint32_t p = gpu::kernels::conv2d_out_h(g), q = gpu::kernels::conv2d_out_w(g);
  ASSERT_GT(p * q, 0u);
  const auto in = random_floats(size_t{g.n} * g.c * g.h * g.w, 6), f = random_floats(size_t{g.k} * g.c * g.r * g.s, 7);
  const size_t outs = size_t{g.n} * g.k * p * q;
  const uint64_t pi = b.put(in), pf = b.put(f), po = b.put(std::vector<float>(outs, 9.f));
  b.dev->conv2d(S, g, b.ptr(pi), b.ptr(pf), b.ptr(po));
  ASSERT_TRUE(b.dev->synchronize(S));
  std::vector<float> want(outs), scale(outs);
  gpu::kernels::conv2d(g, in.data(), f.data(), want.data());
  gpu::kernels::conv2d(g, magnitudes(in).data(), magnitudes(f).data(), scale.data());
  expect_model("conv2d", b.get(po, outs), want, scale);
  // What ran it (on the GPU: "... (cuda worker; conv2d cuDNN 9.x.y)" or
  // "conv2d PTX, no cuDNN").
  std::printf("conv2d's worker: %s\n", b.dev->info(0)->device.c_str());
}

TEST(WorkerBuiltins, MriqGivesTheModelsResult) {
  Bed b = make();
  ASSERT_TRUE(b.dev);
  constexpr uint32_t K = 1500, X = 2000;  // k over two shared tiles on the GPU
  std::vector<std::vector<float>> in;
  for (uint32_t i = 0; i < 7; ++i) in.push_back(random_floats(i < 4 ? K : X, 10 + i));
  std::vector<uint64_t> at;
  for (const auto& v : in) at.push_back(b.put(v));
  const uint64_t qr = b.put(std::vector<float>(X, 1.f)), qi = b.put(std::vector<float>(X, 1.f));
  b.dev->mriq(S, K, X, b.ptr(at[0]), b.ptr(at[1]), b.ptr(at[2]), b.ptr(at[3]), b.ptr(at[4]), b.ptr(at[5]), b.ptr(at[6]),
              b.ptr(qr), b.ptr(qi));
  ASSERT_TRUE(b.dev->synchronize(S));
  std::vector<float> want_r(X), want_i(X);
  gpu::kernels::mriq(K, X, in[0].data(), in[1].data(), in[2].data(), in[3].data(), in[4].data(), in[5].data(),
                     in[6].data(), want_r.data(), want_i.data());
  float phi = 0;  // |sin|, |cos| <= 1: every output's terms sum to at most this
  for (float v : in[3]) phi += std::fabs(v);
  const std::vector<float> scale(X, phi);
  expect_model("mriq qr", b.get(qr, X), want_r, scale);
  expect_model("mriq qi", b.get(qi, X), want_i, scale);
}

// The engines hand the worker device pointers into the VM's part; one
// into another VM's part is unmapped in this worker: a fault there, the
// channel's kernel_error, and the next work runs on a new worker.
TEST(WorkerBuiltins, ABufferOutsideTheVmsPartFaultsInItsWorker) {
  Bed b = make();
  ASSERT_TRUE(b.dev);
  const uint64_t pa = b.put(random_floats(64, 1));
  cls::SgemmArgs g{};
  g.m = 8, g.n = 8, g.k = 8, g.alpha = 1.f;
  b.dev->sgemm(S, g, b.ptr(pa), b.ptr(pa), b.ptr(PART + 4096));
  auto s = b.dev->synchronize(S);
  ASSERT_FALSE(s);
  ASSERT_TRUE(b.dev->failure(S));
  EXPECT_EQ(b.dev->failure(S)->code, regs::ChannelError::kernel_error);
  if (test_device() == "fake") {
    EXPECT_NE(s.error().message.find("kernel: an access to an unmapped address"), std::string::npos)
        << s.error().message;
  }
  b.dev->saxpy(S, 1.f, b.ptr(pa), b.ptr(pa + 256), 8);
  EXPECT_TRUE(b.dev->synchronize(S));
  EXPECT_EQ(b.dev->info(0)->restarts, 1u);
}

// Argument blocks the worker refuses, straight through WorkerHost: each
// a bad command (the worker reports it and exits; the wait says why).
TEST(WorkerBuiltins, ABadArgumentBlockIsABadCommandNamingIt) {
  WorkerOptions o;
  o.binary = VGPU_WORKER_BIN;
  o.device = "fake";
  auto h = WorkerHost::spawn(o);
  ASSERT_TRUE(h) << h.error().what();
  cls::Conv2dArgs too_big{};  // a 5x5 filter on a 2x2 input without padding
  too_big.n = too_big.c = too_big.k = 1, too_big.h = too_big.w = 2, too_big.r = too_big.s = 5;
  too_big.stride_h = too_big.stride_w = 1;
  Command unknown = kernel_command(cls::Kernel::saxpy, 1, cls::SaxpyArgs{});
  unknown.a = 99;
  Command short_block = kernel_command(cls::Kernel::sgemm, 1, cls::SgemmArgs{});
  short_block.c = sizeof(cls::SgemmArgs) - 4;
  Command fill_as_kernel = kernel_command(cls::Kernel::fill, 1, cls::FillArgs{});
  const std::pair<Command, const char*> cases[] = {
      {unknown, "kernel 99 is not a built-in the worker runs"},
      {fill_as_kernel, "kernel 1 is not a built-in the worker runs"},
      {short_block, "sgemm's argument block of 44 bytes (48 expected)"},
      {kernel_command(cls::Kernel::conv2d, 1, too_big), "conv2d arguments the model refuses"},
  };
  for (const auto& [c, why] : cases) {
    auto t = (*h)->submit(c);
    ASSERT_TRUE(t) << t.error().what();
    auto w = (*h)->wait(*t, 5s);
    ASSERT_FALSE(w) << why;
    EXPECT_EQ(w.error().error, regs::ChannelError::kernel_error) << why;
    EXPECT_NE(w.error().reason.find(std::string("kernel: bad command: ") + why), std::string::npos) << w.error().reason;
  }
  auto t = (*h)->submit(make_command(Op::nop, 1));  // a new worker, as after any failure
  ASSERT_TRUE(t);
  EXPECT_TRUE((*h)->wait(*t, 5s));
  EXPECT_EQ((*h)->info().restarts, 4u);
}

}  // namespace
}  // namespace vgpu::worker
