// SPDX-License-Identifier: GPL-2.0-or-later
// The worker's built-in kernels as the GPU gets them (builtin_kernels.ptx,
// the committed output of scripts/gen-worker-ptx) checked without a GPU: the
// text parses and each entry, run on the PTX interpreter with the grids
// the CUDA worker launches, gives the model's result (gpu/kernels) within
// the workloads' tolerances. So a regenerated or hand-edited PTX that
// computes something else fails in CI.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>
#include "gpu/device/cuda_engine.h"
#include "gpu/kernels/kernels.h"
#include "gpu/ptx/interpreter.h"
#include "gpu/ptx/flat_memory.h"
#include "ptx/params.h"
#include "worker/builtin_ptx.h"
#include "worker/testing/floats.h"
#include "worker/testing/saxpy_madd.h"

namespace vgpu::worker {
namespace {

// Global memory over one host buffer at a fixed VA (outside it: a fault;
// a memory too small for the data makes the launch fault).
struct FakeMemory : ptx::FlatMemory {
  explicit FakeMemory(size_t bytes) : FlatMemory(0x10'0000'0000ull, bytes, 256) {}
};

using testing::ABS_TOL;
using testing::random_floats;
using testing::REL_TOL;

const ptx::Module& builtins() {
  static auto m = [] {
    auto r = ptx::parse_module(BUILTIN_PTX);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : nullptr;
  }();
  return *m;
}

// Runs `entry` over `blocks` blocks of `threads` with the parameters packed in order.
template <typename... Args>
void run(FakeMemory& mem, const char* entry, uint32_t blocks, uint32_t threads, const Args&... args) {
  const ptx::Module& m = builtins();
  const int e = m.find_entry(entry);
  ASSERT_GE(e, 0) << entry;
  ptx::ParamBuffer p(m.entries()[static_cast<size_t>(e)]);
  size_t i = 0;
  (p.set(i++, args), ...);
  ASSERT_TRUE(p.ok()) << entry << ": a parameter of the wrong size";
  ptx::LaunchConfig c;
  c.entry = static_cast<uint32_t>(e);
  c.grid = {blocks, 1, 1};
  c.block = {threads, 1, 1};
  c.params = p.bytes();
  auto r = ptx::run_blocks(m, c, mem, 0, blocks);
  ASSERT_TRUE(r) << entry << ": " << r.error().message;
}

void expect_close(const char* what, const float* got, const std::vector<float>& want, const std::vector<float>& scale) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    bad += !(std::fabs(double{got[i]} - want[i]) <= REL_TOL * scale[i] + ABS_TOL);
  EXPECT_EQ(bad, 0u) << what;
}

TEST(WorkerBuiltinPtx, SaxpyAndMaddOnTheInterpreterGiveTheModelsResult) {
  constexpr uint64_t N = 3000;
  FakeMemory mem(4 * N * sizeof(float) + 4096);
  const auto x = random_floats(N, 1), y = random_floats(N, 2);
  const uint64_t px = mem.put(x), py = mem.put(y), pc = mem.put(std::vector<float>(N, 0.f));
  // Fewer blocks than elements need: the grid-stride loop covers the rest.
  run(mem, "vgpu_saxpy", 4u, BUILTIN_THREADS, 1.5f, px, py, N);
  run(mem, "vgpu_madd", 3u, BUILTIN_THREADS, px, py, pc, N);
  const auto want = testing::saxpy_then_madd(1.5f, x, y);
  expect_close("saxpy", mem.at<float>(py), want.y, want.scale_y);
  expect_close("madd", mem.at<float>(pc), want.c, want.scale_c);
}

TEST(WorkerBuiltinPtx, Conv2dOnTheInterpreterGivesTheModelsResult) {
  cls::Conv2dArgs a{};
  a.n = 1, a.c = 3, a.h = 9, a.w = 11, a.k = 4, a.r = 3, a.s = 2, a.pad_h = 1, a.pad_w = 1, a.stride_h = 2,
  a.stride_w = 1;
  const uint32_t p = gpu::kernels::conv2d_out_h(a), q = gpu::kernels::conv2d_out_w(a);
  const auto in = random_floats(size_t{a.n} * a.c * a.h * a.w, 3), f = random_floats(size_t{a.k} * a.c * a.r * a.s, 4);
  const size_t outs = size_t{a.n} * a.k * p * q;
  FakeMemory mem((in.size() + f.size() + outs) * sizeof(float) + 4096);
  const uint64_t pi = mem.put(in), pf = mem.put(f), po = mem.put(std::vector<float>(outs, 0.f));
  const gpu::cuda::ConvShape g{a.n, a.c, a.h, a.w, a.k, a.r, a.s, a.pad_h, a.pad_w, a.stride_h, a.stride_w, p, q};
  run(mem, "vgpu_conv2d", 1u, BUILTIN_THREADS, g, pi, pf, po);
  std::vector<float> want(outs), scale(outs);
  gpu::kernels::conv2d(a, in.data(), f.data(), want.data());
  std::vector<float> ai = in, af = f;
  for (float& v : ai) v = std::fabs(v);
  for (float& v : af) v = std::fabs(v);
  gpu::kernels::conv2d(a, ai.data(), af.data(), scale.data());
  expect_close("conv2d", mem.at<float>(po), want, scale);
}

TEST(WorkerBuiltinPtx, MriqOnTheInterpreterGivesTheModelsResult) {
  constexpr uint32_t K = 1100, X = 300;  // k over two shared tiles, x over two blocks
  std::vector<std::vector<float>> in;
  for (uint32_t i = 0; i < 7; ++i) in.push_back(random_floats(i < 4 ? K : X, 10 + i));
  FakeMemory mem((4 * K + 5 * X) * sizeof(float) + 16 * 256);
  std::vector<uint64_t> at;
  for (const auto& v : in) at.push_back(mem.put(v));
  const uint64_t qr = mem.put(std::vector<float>(X, 0.f)), qi = mem.put(std::vector<float>(X, 0.f));
  run(mem, "vgpu_mriq", (X + MRIQ_THREADS - 1) / MRIQ_THREADS, MRIQ_THREADS, K, X, at[0], at[1], at[2], at[3], at[4],
      at[5], at[6], qr, qi);
  std::vector<float> want_r(X), want_i(X);
  gpu::kernels::mriq(K, X, in[0].data(), in[1].data(), in[2].data(), in[3].data(), in[4].data(), in[5].data(),
                     in[6].data(), want_r.data(), want_i.data());
  float phi = 0;
  for (float v : in[3]) phi += std::fabs(v);
  const std::vector<float> scale(X, phi);
  expect_close("mriq qr", mem.at<float>(qr), want_r, scale);
  expect_close("mriq qi", mem.at<float>(qi), want_i, scale);
}

}  // namespace
}  // namespace vgpu::worker
