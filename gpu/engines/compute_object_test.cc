// SPDX-License-Identifier: GPL-2.0-or-later
// The compute object: its kernels against their references, sliced
// launches (§10.5) and engine time (testing/compute_test.h has the fixture).
#include "gpu/engines/testing/compute_test.h"

namespace vgpu::gpu::testing {

// fill, saxpy and madd over 1000, 1000 and 16 x 20 elements, each
// checked against its reference.
void ComputeTest::fill_writes_value() {
  const uint64_t dst = buffer(std::vector<float>(1001, 0.0f));
  ASSERT_TRUE(run(Kernel::fill, cls::FillArgs{dst, 1000, 2.5f}).has_value());
  auto out = read_vec<float>(dst, 1001);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(out[i], 2.5f) << i;
  EXPECT_EQ(out[1000], 0.0f);
}

void ComputeTest::saxpy_matches_reference() {
  const auto x = ramp(1000, 0.1f, 0.0f);
  auto y = ramp(1000, 0.07f, 1.0f);
  const uint64_t xv = buffer(x), yv = buffer(y);
  expect_matches_reference(
      Kernel::saxpy, cls::SaxpyArgs{xv, yv, 1000, 3.0f}, [&] { kernels::reference::saxpy(3.0f, x, y); }, yv, y, 1e-6f);
}

void ComputeTest::madd_matches_reference() {
  const auto a = ramp(16 * 20, 0.3f, 0.0f), b = ramp(16 * 20, 0.2f, 2.0f);
  std::vector<float> c(16 * 20, 0.0f);
  const uint64_t av = buffer(a), bv = buffer(b), cv = buffer(c);
  expect_matches_reference(
      Kernel::madd, cls::MaddArgs{av, bv, cv, 16, 20}, [&] { kernels::reference::madd(a, b, c); }, cv, c, 1e-6f);
}

// A convolution of n images of 2 x 8 x 7 with k 3 x 3 filters (pad 1,
// strides 1 and 2), run and checked against the reference.
void ComputeTest::conv2d_matches_reference(uint32_t n, uint32_t k) {
  cls::Conv2dArgs args{};
  args.n = n;
  args.c = 2;
  args.h = 8;
  args.w = 7;
  args.k = k;
  args.r = 3;
  args.s = 3;
  args.pad_h = 1;
  args.pad_w = 1;
  args.stride_h = 1;
  args.stride_w = 2;
  const uint32_t p = kernels::conv2d_out_h(args), q = kernels::conv2d_out_w(args);
  ASSERT_GT(p * q, 0u);
  const auto in = ramp(size_t{n} * 2 * 8 * 7, 0.3f, 0.0f), filter = ramp(size_t{k} * 2 * 3 * 3, 0.5f, 0.1f);
  std::vector<float> out(size_t{n} * k * p * q, 0.0f);
  args.input = buffer(in);
  args.filter = buffer(filter);
  args.output = buffer(out);
  expect_matches_reference(
      Kernel::conv2d, args, [&] { kernels::reference::conv2d(args, in.data(), filter.data(), out.data()); },
      args.output, out, 1e-4f);
}

// MRI-Q over x points with 32 k-space samples, checked against the reference.
void ComputeTest::mriq_matches_reference(uint32_t x_points) {
  constexpr uint32_t K = 32;
  const uint32_t X = x_points;
  const auto kx = ramp(K, 0.1f, 0.0f), ky = ramp(K, 0.2f, 0.0f), kz = ramp(K, 0.3f, 0.0f), phi = ramp(K, 0.4f, 1.0f);
  const auto x = ramp(X, 0.05f, 0.0f), y = ramp(X, 0.06f, 0.0f), z = ramp(X, 0.07f, 0.0f);
  std::vector<float> qr(X, 0.0f), qi(X, 0.0f);
  cls::MriqArgs args{buffer(kx), buffer(ky), buffer(kz), buffer(phi), buffer(x), buffer(y),
                     buffer(z),  buffer(qr), buffer(qi), K,           X};
  ASSERT_TRUE(run(Kernel::mriq, args).has_value());
  kernels::reference::mriq(K, X, kx.data(), ky.data(), kz.data(), phi.data(), x.data(), y.data(), z.data(), qr.data(),
                           qi.data());
  expect_near_all(read_vec<float>(args.qr, X), qr, 1e-3f);
  expect_near_all(read_vec<float>(args.qi, X), qi, 1e-3f);
}

}  // namespace vgpu::gpu::testing

namespace vgpu::gpu {
namespace {

using namespace testing;  // the fixture, its helpers and the compute class names (compute_test.h)

// ---------------------------------------------------------------- kernels


TEST_F(ComputeTest, FillWritesValue) {
  fill_writes_value();
  EXPECT_EQ(engine_runs_, 1);
}

TEST_F(ComputeTest, SaxpyMatchesReference) { saxpy_matches_reference(); }

TEST_F(ComputeTest, MaddMatchesReference) { madd_matches_reference(); }

TEST_F(ComputeTest, SgemmMatchesReference) {
  const cls::SgemmArgs shape{0, 0, 0, 16, 12, 8, 1.5f, 0.5f, 0};
  const auto a = ramp(16 * 8, 0.3f, 0.0f), b = ramp(8 * 12, 0.2f, 0.5f);
  auto c = ramp(16 * 12, 0.1f, 1.0f);
  cls::SgemmArgs args = shape;
  args.a = buffer(a);
  args.b = buffer(b);
  args.c = buffer(c);
  ASSERT_NO_FATAL_FAILURE(expect_matches_reference(
      Kernel::sgemm, args, [&] { kernels::reference::sgemm(args, a.data(), b.data(), c.data()); }, args.c, c, 1e-4f));
  EXPECT_EQ(clock_.now_ns(), kernels::sgemm_cost_ns(cost_, args));
}


TEST_F(ComputeTest, Conv2dMatchesReference) { conv2d_matches_reference(1, 3); }


TEST_F(ComputeTest, MriqMatchesReference) { mriq_matches_reference(64); }

// ---------------------------------------------------------------- slices (§10.5)

// Every kernel run in slices of thread blocks computes what it computes
// whole, in ceil(blocks / slice) pieces, charging one launch cost more per
// extra piece.
TEST_F(ComputeTest, SlicedFillSaxpyMaddMatchTheirReferences) {
  grid_x_ = 7;  // 7 blocks over 1000 elements: uneven parts
  slice_blocks_ = 2;
  fill_writes_value();
  EXPECT_EQ(pieces_, pieces(4));
  saxpy_matches_reference();
  madd_matches_reference();
  EXPECT_EQ(pieces_, pieces(12));
}

// The host BLAS may round a row differently with the number of rows one
// call computes (OpenBLAS's Zen kernels do: in a 37x12x8 product, 31-121
// of the 444 elements differ in their last bits between one call and
// calls of 4, 11 or 16 rows, and this test failed on such a host), so a
// slice's rows equal the whole launch's to within rounding.
TEST_F(ComputeTest, SlicedSgemmMatchesWholeToWithinRoundingAndCostsALaunchPerExtraSlice) {
  const cls::SgemmArgs shape{0, 0, 0, 37, 12, 8, 1.5f, 0.5f, 0};
  const auto a = ramp(37 * 8, 0.3f, 0.0f), b = ramp(8 * 12, 0.2f, 0.5f), c = ramp(37 * 12, 0.1f, 1.0f);
  cls::SgemmArgs whole = shape, sliced = shape;
  whole.a = sliced.a = buffer(a);
  whole.b = sliced.b = buffer(b);
  whole.c = buffer(c);
  sliced.c = buffer(c);
  grid_x_ = 1;
  grid_y_ = 10;  // 10 blocks over 37 rows of C
  ASSERT_TRUE(run(Kernel::sgemm, whole).has_value());
  const uint64_t whole_ns = clock_.now_ns();
  EXPECT_EQ(whole_ns, kernels::sgemm_cost_ns(cost_, whole));
  slice_blocks_ = 3;  // 4 slices: 3, 3, 3, 1 blocks
  ASSERT_TRUE(run(Kernel::sgemm, sliced).has_value());
  EXPECT_EQ(pieces_, pieces(4));
  expect_near_all(read_vec<float>(sliced.c, c.size()), read_vec<float>(whole.c, c.size()), 1e-6f);
  std::vector<float> want = c;
  kernels::reference::sgemm(shape, a.data(), b.data(), want.data());
  expect_near_all(read_vec<float>(sliced.c, c.size()), want, 1e-4f);
  if (!device_engines_) {
    EXPECT_NEAR(static_cast<double>(clock_.now_ns() - whole_ns), static_cast<double>(whole_ns + 3 * cost_.launch_ns),
                4.0)
        << "rounding of the proportional parts only";
  }
}

TEST_F(ComputeTest, SlicedConv2dAcrossImagesAndChannelsMatchesReference) {
  grid_x_ = 11;  // 11 blocks over 3 output tiles (one per image): some slices have none
  slice_blocks_ = 4;
  conv2d_matches_reference(3, 5);
  EXPECT_EQ(pieces_, pieces(3));
}

TEST_F(ComputeTest, SlicedMriqMatchesReference) {
  grid_x_ = 9;
  slice_blocks_ = 2;
  mriq_matches_reference(200);
  EXPECT_EQ(pieces_, pieces(5));
}

TEST_F(ComputeTest, SlicedSpinSleepsItsDurationInParts) {
  clock_.advance_to(1000);
  grid_x_ = 10;
  slice_blocks_ = 3;
  ASSERT_TRUE(run(Kernel::spin, cls::SpinArgs{1'000'003}).has_value());
  EXPECT_EQ(pieces_, pieces(4));
  if (!device_engines_) {
    EXPECT_EQ(clock_.now_ns(), 1000u + 1'000'003u) << "a spin's parts add up to its duration";
  }
}

TEST_F(ComputeTest, ALaunchOfNoMoreBlocksThanTheSliceRunsWhole) {
  grid_x_ = 4;
  slice_blocks_ = 4;
  const uint64_t dst = buffer(std::vector<float>(100, 0.0f));
  ASSERT_TRUE(run(Kernel::fill, cls::FillArgs{dst, 100, 1.0f}).has_value());
  EXPECT_EQ(pieces_, 0);
  EXPECT_EQ(engine_runs_, 1);
}

TEST_F(ComputeTest, ASliceRunsPastTheEngineBudgetEndsWithTimeout) {
  grid_x_ = 10;
  slice_blocks_ = 5;
  engine_budget_ns_ = 400'000;  // the first slice (500 us) does not fit
  expect_error(run(Kernel::spin, cls::SpinArgs{1'000'000}), regs::ChannelError::timeout);
  EXPECT_EQ(pieces_, 0);
}

TEST_F(ComputeTest, SpinAdvancesVirtualClockByItsDuration) {
  clock_.advance_to(1000);
  ASSERT_TRUE(run(Kernel::spin, cls::SpinArgs{5'000'000}).has_value());
  EXPECT_EQ(clock_.now_ns(), 1000u + 5'000'000u);
}

// ENGINE_TIMEOUT: a spin longer than the entry's engine budget stops at
// the deadline with channel error timeout.
TEST_F(ComputeTest, SpinPastTheEngineBudgetStopsAtItWithTimeout) {
  engine_budget_ns_ = 1'000'000;
  const uint64_t before = clock_.now_ns();
  auto r = run(Kernel::spin, cls::SpinArgs{5'000'000});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, regs::ChannelError::timeout);
  EXPECT_EQ(clock_.now_ns() - before, 1'000'000u);
}

TEST_F(ComputeTest, SpinOnRealClockWaitsItsDuration) {
  RealClock real;
  write_program(static_cast<uint32_t>(Kernel::spin));
  ChannelContext ctx = context();
  ChannelContext real_ctx{ctx.chid, ctx.as, ctx.mmu, real, ctx.cost, ctx.nonstall, ctx.semaphore_written};
  MethodOutcome out = method_done();
  for (const Method& m : launch_sequence(cls::SpinArgs{2'000'000})) {
    out = compute_.method(real_ctx, m.mthd, m.data);
    ASSERT_TRUE(out.has_value());
    if (m.mthd == LAUNCH) break;
  }
  ASSERT_TRUE(out->has_value());
  const uint64_t before = real.now_ns();
  ASSERT_TRUE((*out)->run().has_value());
  EXPECT_GE(real.now_ns() - before, 2'000'000u);  // a lower bound: the spin really waited
  EXPECT_EQ(clock_.now_ns(), 0u);
}

// Brief work may run on PFIFO's thread (Pfifo, EngineThread::run_here_if_idle):
// a one-element fill is brief; a spin (its cost is its duration) and a
// fill whose modeled work is past BRIEF_WORK_NS are not; nor is work for
// a device.
TEST_F(ComputeTest, OnlyTinyWorkIsBrief) {
  ChannelContext ctx = context();
  // Whether the work LAUNCH hands to the engine is brief.
  const auto brief = [&](Kernel kernel, const auto& args) {
    write_program(static_cast<uint32_t>(kernel));
    for (const Method& m : launch_sequence(args)) {
      MethodOutcome out = compute_.method(ctx, m.mthd, m.data);
      if (out && *out && m.mthd == LAUNCH) return (*out)->brief;
    }
    ADD_FAILURE() << "LAUNCH gave no engine work";
    return false;
  };
  const uint64_t one = buffer(std::vector<float>(1, 0.0f));
  // Work for a device (the fake one in gpu_engines_fake_device) is not PFIFO's to run.
  EXPECT_EQ(brief(Kernel::fill, cls::FillArgs{one, 1, 1.0f}), ctx.device == nullptr);
  const uint32_t n = static_cast<uint32_t>((BRIEF_WORK_NS + 1) * cost_.bytes_per_ns / sizeof(float)) + 1;
  const uint64_t big = buffer(std::vector<float>(n, 0.0f));
  EXPECT_FALSE(brief(Kernel::fill, cls::FillArgs{big, n, 1.0f}));
  EXPECT_FALSE(brief(Kernel::spin, cls::SpinArgs{1}));
}

TEST_F(ComputeTest, FillChargesStreamCost) {
  const uint64_t dst = buffer(std::vector<float>(512, 0.0f));
  ASSERT_TRUE(run(Kernel::fill, cls::FillArgs{dst, 512, 1.0f}).has_value());
  EXPECT_EQ(clock_.now_ns(), kernels::stream_cost_ns(cost_, 512 * sizeof(float)));
}

TEST_F(ComputeTest, KernelOnScatteredPagesSeesWholeBuffer) {
  const uint64_t dst = SCATTER_VA + 8;
  const uint32_t count = static_cast<uint32_t>((3 * fmt::SMALL_PAGE) / sizeof(float));
  ASSERT_TRUE(run(Kernel::fill, cls::FillArgs{dst, count, -1.0f}).has_value());
  auto out = read_vec<float>(dst, count);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], -1.0f) << i;
}

}  // namespace
}  // namespace vgpu::gpu
