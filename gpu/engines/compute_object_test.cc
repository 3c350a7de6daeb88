// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/compute_object.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/engines/engine_limits.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/engines/testing/engine_env.h"
#include "gpu/kernels/kernels.h"
#include "gpu/kernels/reference.h"

namespace vgpu::gpu {
namespace {

using namespace cls::compute;
using cls::Kernel;
using testing::Method;

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * scale) + offset;
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1.0f + std::fabs(want[i]))) << "element " << i;
}

class ComputeTest : public testing::EngineEnv {
 protected:
  static constexpr uint64_t PROGRAM_VA = LINEAR_VA;
  static constexpr uint32_t PROGRAM_START = 0x100;
  static constexpr uint64_t CB_VA = LINEAR_VA + 0x1000;
  static constexpr uint32_t CB_SIZE = 0x100;
  static constexpr uint64_t BUFFERS_VA = LINEAR_VA + 0x10000;

  // GPU memory for one buffer of floats, filled with `init`.
  uint64_t buffer(const std::vector<float>& init) {
    const uint64_t va = next_buffer_;
    next_buffer_ = align_up(next_buffer_ + init.size() * sizeof(float) + 1, 256);
    write_vec(va, init);
    return va;
  }

  void write_program(uint32_t kernel, uint32_t magic = cls::PROGRAM_MAGIC, uint32_t version = cls::PROGRAM_VERSION) {
    const cls::ProgramDescriptor d{magic, version, kernel, 0};
    write(PROGRAM_VA + PROGRAM_START, &d, sizeof(d));
  }

  static std::vector<Method> select_cb(uint64_t va, uint32_t size) {
    return {{SET_CONSTANT_BUFFER_SELECTOR_A, size},
            {SET_CONSTANT_BUFFER_SELECTOR_B, hi32(va)},
            {SET_CONSTANT_BUFFER_SELECTOR_C, lo32(va)}};
  }

  // The argument words, uploaded inline (LOAD_CONSTANT_BUFFER, non-incrementing).
  template <typename Args>
  static std::vector<Method> upload(const Args& args) {
    std::vector<uint32_t> words((sizeof(Args) + 3) / 4, 0);
    std::memcpy(words.data(), &args, sizeof(Args));
    std::vector<Method> m{{LOAD_CONSTANT_BUFFER_OFFSET, 0}};
    for (uint32_t w : words) m.push_back({LOAD_CONSTANT_BUFFER, w});
    return m;
  }

  // A mesa-like launch sequence for a kernel with these arguments.
  template <typename Args>
  std::vector<Method> launch_sequence(const Args& args, bool bind = true) {
    std::vector<Method> m{{SET_PROGRAM_REGION_A, hi32(PROGRAM_VA)},
                          {SET_PROGRAM_REGION_B, lo32(PROGRAM_VA)},
                          {SET_CTA_PROGRAM_START, PROGRAM_START}};
    for (const Method& x : select_cb(CB_VA, CB_SIZE)) m.push_back(x);
    for (const Method& x : upload(args)) m.push_back(x);
    if (bind) m.push_back({BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(ARG_CB_SLOT)});
    m.insert(m.end(), {{SET_SHADER_SHARED_MEMORY_SIZE, 0x100},
                       {SET_CTA_THREAD_COUNT, 256},
                       {SET_CTA_BARRIER_COUNT, 1},
                       {SET_CTA_REGISTER_COUNT, 16},
                       {SET_GRID_PARAM, 1},
                       {SET_LAUNCH_ID, 0},
                       {INVALIDATE_SHADER_CACHES_NO_WFI, 0x1011},
                       {SET_CTA_THREAD_DIMENSION_A, DimLo::make(256) | DimHi::make(1)},
                       {SET_CTA_THREAD_DIMENSION_B, 1},
                       {SET_CTA_RASTER_SIZE_A, DimLo::make(grid_x_) | DimHi::make(grid_y_)},
                       {SET_CTA_RASTER_SIZE_B, 1},
                       {BEGIN_GRID, 0},
                       {SET_LAUNCH_SIZE, 0},
                       {LAUNCH, 0x1000},
                       {END_GRID, 0},
                       {WAIT_REF_COUNT, 1}});
    return m;
  }

  template <typename Args>
  MethodDone run(Kernel kernel, const Args& args) {
    write_program(static_cast<uint32_t>(kernel));
    return send(compute_, launch_sequence(args));
  }

  void expect_error(const MethodDone& r, regs::ChannelError code, uint32_t method = LAUNCH) {
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, code);
    EXPECT_EQ(r.error().method, method);
  }

  ComputeObject compute_;
  uint64_t next_buffer_ = BUFFERS_VA;
  void fill_writes_value();
  void saxpy_matches_reference();
  void madd_matches_reference();
  void conv2d_matches_reference(uint32_t n, uint32_t k);
  void mriq_matches_reference(uint32_t x_points);

  // Pieces a sliced launch runs in: none where a device runs it whole (docs/cuda.md).
  int pieces(int n) const { return device_engines_ ? 0 : n; }

  uint32_t grid_x_ = 4;  // the launch's grid: grid_x_ x grid_y_ x 1 blocks
  uint32_t grid_y_ = 1;
};

// ---------------------------------------------------------------- kernels

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
  ASSERT_TRUE(run(Kernel::saxpy, cls::SaxpyArgs{xv, yv, 1000, 3.0f}).has_value());
  kernels::reference::saxpy(3.0f, x, y);
  expect_near_all(read_vec<float>(yv, 1000), y, 1e-6f);
}

void ComputeTest::madd_matches_reference() {
  const auto a = ramp(16 * 20, 0.3f, 0.0f), b = ramp(16 * 20, 0.2f, 2.0f);
  std::vector<float> c(16 * 20, 0.0f);
  const uint64_t av = buffer(a), bv = buffer(b), cv = buffer(c);
  ASSERT_TRUE(run(Kernel::madd, cls::MaddArgs{av, bv, cv, 16, 20}).has_value());
  kernels::reference::madd(a, b, c);
  expect_near_all(read_vec<float>(cv, c.size()), c, 1e-6f);
}

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
  ASSERT_TRUE(run(Kernel::sgemm, args).has_value());
  kernels::reference::sgemm(args, a.data(), b.data(), c.data());
  expect_near_all(read_vec<float>(args.c, c.size()), c, 1e-4f);
  EXPECT_EQ(clock_.now_ns(), kernels::sgemm_cost_ns(cost_, args));
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
  ASSERT_TRUE(run(Kernel::conv2d, args).has_value());
  kernels::reference::conv2d(args, in.data(), filter.data(), out.data());
  expect_near_all(read_vec<float>(args.output, out.size()), out, 1e-4f);
}

TEST_F(ComputeTest, Conv2dMatchesReference) { conv2d_matches_reference(1, 3); }

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
  grid_x_ = 11;  // 11 blocks over 15 (image, channel) pairs: slices cross images
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

// ---------------------------------------------------------------- constant buffers and reports

TEST_F(ComputeTest, LoadConstantBufferWritesAtAdvancingOffset) {
  std::vector<Method> m = select_cb(CB_VA, CB_SIZE);
  m.insert(m.end(), {{LOAD_CONSTANT_BUFFER_OFFSET, 8},
                     {LOAD_CONSTANT_BUFFER, 0x11},
                     {LOAD_CONSTANT_BUFFER + 4, 0x22},  // incrementing form: the next array word
                     {LOAD_CONSTANT_BUFFER, 0x33}});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_EQ(read_vec<uint32_t>(CB_VA + 8, 3), (std::vector<uint32_t>{0x11, 0x22, 0x33}));
  EXPECT_EQ(compute_.state().cb_load_offset, 20u);
}

TEST_F(ComputeTest, LoadConstantBufferPastItsSizeIsBadArgument) {
  std::vector<Method> m = select_cb(CB_VA, 8);
  m.insert(m.end(), {{LOAD_CONSTANT_BUFFER_OFFSET, 4}, {LOAD_CONSTANT_BUFFER, 1}, {LOAD_CONSTANT_BUFFER, 2}});
  expect_error(send(compute_, m), regs::ChannelError::bad_argument, LOAD_CONSTANT_BUFFER);
}

// PFIFO hands a non-incrementing run of LOAD_CONSTANT_BUFFER words over at
// once (ClassObject::method_words): the same bytes and offset as word by word.
TEST_F(ComputeTest, LoadConstantBufferWordsAtOnceAsWordByWord) {
  std::vector<Method> m = select_cb(CB_VA, CB_SIZE);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 8});
  ASSERT_TRUE(send(compute_, m).has_value());
  ChannelContext ctx = context();
  const std::vector<uint32_t> words{0x11, 0x22, 0x33};
  auto out = compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, words);
  ASSERT_TRUE(out.has_value()) << "taken at once";
  ASSERT_TRUE(out->has_value());
  EXPECT_FALSE(out->value().has_value()) << "no engine work";
  EXPECT_EQ(read_vec<uint32_t>(CB_VA + 8, 3), words);
  EXPECT_EQ(compute_.state().cb_load_offset, 20u);
}

// What would fault part-way (past the buffer's size, onto a second page)
// is left to the word-by-word path, untouched; other methods too.
TEST_F(ComputeTest, LoadConstantBufferWordsLeaveWhatMayFaultPartWay) {
  ChannelContext ctx = context();
  const std::vector<uint32_t> two{1, 2};
  std::vector<Method> m = select_cb(CB_VA, 8);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 4});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_FALSE(compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, two).has_value()) << "past the size";
  EXPECT_EQ(compute_.state().cb_load_offset, 4u);

  const uint64_t straddling = CB_VA + fmt::SMALL_PAGE - 4;
  m = select_cb(straddling, CB_SIZE);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 0});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_FALSE(compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, two).has_value()) << "onto a second page";
  EXPECT_EQ(compute_.state().cb_load_offset, 0u);

  EXPECT_FALSE(compute_.method_words(ctx, SET_CTA_THREAD_COUNT, two).has_value());
}

// A buffer on an unmapped page faults at its first word, as word by word.
TEST_F(ComputeTest, LoadConstantBufferWordsOnAnUnmappedPageFaultAsTheFirstWord) {
  std::vector<Method> m = select_cb(UNMAPPED_VA, CB_SIZE);
  m.push_back({LOAD_CONSTANT_BUFFER_OFFSET, 0});
  ASSERT_TRUE(send(compute_, m).has_value());
  ChannelContext ctx = context();
  auto out = compute_.method_words(ctx, LOAD_CONSTANT_BUFFER, std::vector<uint32_t>{1, 2, 3});
  ASSERT_TRUE(out.has_value()) << "one page: taken at once";
  ASSERT_FALSE(out->has_value());
  EXPECT_EQ(out->error().code, regs::ChannelError::mmu_fault);
  EXPECT_EQ(out->error().method, LOAD_CONSTANT_BUFFER);
  ASSERT_TRUE(out->error().mmu.has_value());
  EXPECT_EQ(out->error().mmu->va, UNMAPPED_VA);
  EXPECT_EQ(out->error().mmu->unit, regs::FaultUnit::pgraph);
  EXPECT_EQ(compute_.state().cb_load_offset, 0u);
  // Word by word, the same fault.
  m.push_back({LOAD_CONSTANT_BUFFER, 1});
  const MethodDone one = send(compute_, m);
  ASSERT_FALSE(one.has_value());
  ASSERT_TRUE(one.error().mmu.has_value());
  EXPECT_EQ(one.error().mmu->va, UNMAPPED_VA);
}

TEST_F(ComputeTest, BindRecordsSelectedBufferAndUnbinds) {
  std::vector<Method> m = select_cb(CB_VA, CB_SIZE);
  m.push_back({BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(3)});
  ASSERT_TRUE(send(compute_, m).has_value());
  EXPECT_TRUE(compute_.state().bound[3].valid);
  EXPECT_EQ(compute_.state().bound[3].va, CB_VA);
  EXPECT_EQ(compute_.state().bound[3].size, CB_SIZE);
  ASSERT_TRUE(send(compute_, {{BIND_CONSTANT_BUFFER, BindSlot::make(3)}}).has_value());
  EXPECT_FALSE(compute_.state().bound[3].valid);
}

TEST_F(ComputeTest, BindBeyondLastSlotIsBadArgument) {
  expect_error(send(compute_, {{BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(NUM_CB_SLOTS)}}),
               regs::ChannelError::bad_argument, BIND_CONSTANT_BUFFER);
}

TEST_F(ComputeTest, ReportSemaphoreFourWordsAfterLaunchWithAwaken) {
  const uint64_t sem = LINEAR_VA + 0x3000;
  ASSERT_TRUE(run(Kernel::spin, cls::SpinArgs{1000}).has_value());
  ASSERT_TRUE(send(compute_, {{SET_REPORT_SEMAPHORE_A, hi32(sem)},
                              {SET_REPORT_SEMAPHORE_B, lo32(sem)},
                              {SET_REPORT_SEMAPHORE_C, 0xabc},
                              {SET_REPORT_SEMAPHORE_D, ReportAwaken::make(1)}})
                  .has_value());
  const auto words = read_vec<uint32_t>(sem, 4);
  EXPECT_EQ(words[0], 0xabcu);
  EXPECT_EQ(words[1], 0u);
  EXPECT_EQ(join64(words[3], words[2]), 1000u);
  EXPECT_EQ(nonstalls_, 1);
  EXPECT_EQ(semaphore_writes_, 1);
}

TEST_F(ComputeTest, ReportSemaphoreOneWord) {
  const uint64_t sem = LINEAR_VA + 0x3000;
  write_vec(sem, std::vector<uint32_t>{0, 7});
  ASSERT_TRUE(send(compute_, {{SET_REPORT_SEMAPHORE_A, hi32(sem)},
                              {SET_REPORT_SEMAPHORE_B, lo32(sem)},
                              {SET_REPORT_SEMAPHORE_C, 5},
                              {SET_REPORT_SEMAPHORE_D, ReportSize4::make(1)}})
                  .has_value());
  EXPECT_EQ(read_vec<uint32_t>(sem, 2), (std::vector<uint32_t>{5, 7}));
  EXPECT_EQ(nonstalls_, 0);
}

TEST_F(ComputeTest, ReportOperationOtherThanReleaseIsIllegal) {
  expect_error(send(compute_,
                    {{SET_REPORT_SEMAPHORE_D, ReportOperation::make(uint32_t(cls::compute::ReportOp::trap))}}),
               regs::ChannelError::illegal_method, SET_REPORT_SEMAPHORE_D);
}

// ---------------------------------------------------------------- launch errors

TEST_F(ComputeTest, BadMagicIsBadProgram) {
  write_program(static_cast<uint32_t>(Kernel::spin), 0x1234);
  auto r = send(compute_, launch_sequence(cls::SpinArgs{1}));
  expect_error(r, regs::ChannelError::bad_program);
  EXPECT_EQ(r.error().addr, PROGRAM_VA + PROGRAM_START);
}

TEST_F(ComputeTest, BadVersionIsBadProgram) {
  write_program(static_cast<uint32_t>(Kernel::spin), cls::PROGRAM_MAGIC, cls::PROGRAM_VERSION + 1);
  expect_error(send(compute_, launch_sequence(cls::SpinArgs{1})), regs::ChannelError::bad_program);
}

TEST_F(ComputeTest, UnknownKernelIsBadProgram) {
  write_program(99);
  expect_error(send(compute_, launch_sequence(cls::SpinArgs{1})), regs::ChannelError::bad_program);
}

TEST_F(ComputeTest, UnmappedProgramIsMmuFault) {
  auto seq = launch_sequence(cls::SpinArgs{1});
  seq.insert(seq.end() - 4, {SET_PROGRAM_REGION_A, hi32(UNMAPPED_VA)});
  auto r = send(compute_, seq);
  expect_error(r, regs::ChannelError::mmu_fault);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(r.error().mmu->unit, regs::FaultUnit::pgraph);
  EXPECT_FALSE(r.error().mmu->write);
}

TEST_F(ComputeTest, UnboundArgumentBufferIsBadArgument) {
  write_program(static_cast<uint32_t>(Kernel::spin));
  expect_error(send(compute_, launch_sequence(cls::SpinArgs{1}, false)), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, ArgumentBufferSmallerThanArgsIsBadArgument) {
  const uint64_t dst = buffer(std::vector<float>(4, 0.0f));
  write_program(static_cast<uint32_t>(Kernel::fill));
  auto seq = launch_sequence(cls::FillArgs{dst, 4, 1.0f});
  // Rebind slot 0 with a selector of 8 bytes just before the launch.
  std::vector<Method> rebind = select_cb(CB_VA, 8);
  rebind.push_back({BIND_CONSTANT_BUFFER, BindValid::make(1) | BindSlot::make(ARG_CB_SLOT)});
  seq.insert(seq.end() - 4, rebind.begin(), rebind.end());
  expect_error(send(compute_, seq), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, ZeroGridIsBadArgument) {
  write_program(static_cast<uint32_t>(Kernel::spin));
  auto seq = launch_sequence(cls::SpinArgs{1});
  seq.insert(seq.end() - 4, {SET_CTA_RASTER_SIZE_A, DimLo::make(0) | DimHi::make(1)});
  expect_error(send(compute_, seq), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, BlockOverMaxThreadsIsBadArgument) {
  write_program(static_cast<uint32_t>(Kernel::spin));
  auto seq = launch_sequence(cls::SpinArgs{1});
  seq.insert(seq.end() - 4, {SET_CTA_THREAD_DIMENSION_A, DimLo::make(64) | DimHi::make(32)});
  expect_error(send(compute_, seq), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, UnmappedBufferIsMmuFaultAtItsAddress) {
  auto r = run(Kernel::fill, cls::FillArgs{UNMAPPED_VA, 16, 1.0f});
  expect_error(r, regs::ChannelError::mmu_fault);
  ASSERT_TRUE(r.error().mmu.has_value());
  EXPECT_EQ(align_down(r.error().mmu->va, fmt::SMALL_PAGE), UNMAPPED_VA);
  EXPECT_TRUE(r.error().mmu->write);
  EXPECT_EQ(r.error().mmu->chid, CHID);
}

TEST_F(ComputeTest, OverflowingSgemmSizesAreBadArgument) {
  expect_error(run(Kernel::sgemm, cls::SgemmArgs{BUFFERS_VA, BUFFERS_VA, BUFFERS_VA, 0x80000000u, 0x80000000u,
                                                 0x80000000u, 1.0f, 0.0f, 0}),
               regs::ChannelError::bad_argument);
}

// A guest maps one big page over 16 GiB of VA with a few legal entries
// (one big-page table named by 128 PDEs) and runs saxpy over it: there is
// no host view of such a range, and a copy would be 32 GiB. The launch
// ends with bad_argument at that buffer, and the host allocates nothing in
// proportion to the guest's range.
TEST_F(ComputeTest, BufferAliasingOnePageOverAHugeRangeIsBadArgumentNotAnAllocation) {
  constexpr uint64_t ALIAS_VA = 0x40'0000'0000;
  constexpr uint64_t PDES = 128;
  auto lpt = builder_->allocate(fmt::LPT.table_bytes());
  ASSERT_TRUE(lpt.has_value());
  for (uint64_t i = 0; i < fmt::LPT.entries(); ++i) vram_->write64(*lpt + i * 8, fmt::pte::make(DATA_PHYS));
  for (uint64_t p = 0; p < PDES; ++p)
    vram_->write64(pd_ + fmt::PD.index(ALIAS_VA + p * fmt::PDE_SPAN) * 8, fmt::pde::make(0, *lpt));
  const uint32_t n = 0xffffffffu;  // 16 GiB of floats, within the aliased range
  ASSERT_LE(uint64_t{n} * sizeof(float), PDES * fmt::PDE_SPAN);
  auto r = run(Kernel::saxpy, cls::SaxpyArgs{ALIAS_VA, ALIAS_VA, n, 1.0f});
  expect_error(r, regs::ChannelError::bad_argument);
  EXPECT_EQ(r.error().addr, ALIAS_VA);
}

// Within the bounce budget, a buffer the MMU cannot window still computes.
TEST_F(ComputeTest, BufferWithoutAViewWithinTheBounceBudgetComputes) {
  // One small page aliased over 65,536 pages (more runs than a window
  // holds); fill writes the same page again and again.
  constexpr uint64_t ALIAS_VA = 0x48'0000'0000;
  auto spt = builder_->allocate(fmt::SPT.table_bytes());
  ASSERT_TRUE(spt.has_value());
  for (uint64_t i = 0; i < fmt::SPT.entries(); ++i) vram_->write64(*spt + i * 8, fmt::pte::make(DATA_PHYS));
  for (uint64_t p = 0; p < 2; ++p)
    vram_->write64(pd_ + fmt::PD.index(ALIAS_VA + p * fmt::PDE_SPAN) * 8, fmt::pde::make(*spt, 0));
  const uint32_t n = static_cast<uint32_t>(Mmu::MAX_WINDOW_RUNS + 1) * 1024;  // floats: MAX_WINDOW_RUNS + 1 pages
  ASSERT_LE(uint64_t{n} * sizeof(float), MAX_BOUNCE_BYTES);
  ASSERT_TRUE(run(Kernel::fill, cls::FillArgs{ALIAS_VA, n, 7.0f}).has_value());
  EXPECT_EQ(vram_->read32(DATA_PHYS + 12), std::bit_cast<uint32_t>(7.0f));
}

TEST_F(ComputeTest, BufferBeyondVaSpaceIsBadArgument) {
  expect_error(run(Kernel::fill, cls::FillArgs{fmt::VA_LIMIT - 16, 0xffffffffu, 1.0f}),
               regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, InvalidConvolutionShapeIsBadArgument) {
  cls::Conv2dArgs args{};
  args.input = args.filter = args.output = BUFFERS_VA;
  args.n = args.c = args.h = args.w = args.k = 1;
  args.r = args.s = 3;  // larger than the unpadded 1x1 input
  args.stride_h = args.stride_w = 1;
  expect_error(run(Kernel::conv2d, args), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, MisalignedBufferIsBadArgument) {
  expect_error(run(Kernel::fill, cls::FillArgs{BUFFERS_VA + 2, 4, 1.0f}), regs::ChannelError::bad_argument);
}

TEST_F(ComputeTest, SpinLongerThanMaximumIsBadArgument) {
  expect_error(run(Kernel::spin, cls::SpinArgs{MAX_SPIN_NS + 1}), regs::ChannelError::bad_argument);
  EXPECT_EQ(clock_.now_ns(), 0u);
}

TEST_F(ComputeTest, UnknownMethodIsIllegal) {
  expect_error(send(compute_, {{0x0800, 0}}), regs::ChannelError::illegal_method, 0x0800);
  EXPECT_STREQ(ComputeObject::method_name(LAUNCH), "LAUNCH");
  EXPECT_STREQ(ComputeObject::method_name(LOAD_CONSTANT_BUFFER + 60), "LOAD_CONSTANT_BUFFER");
  EXPECT_EQ(ComputeObject::method_name(LOAD_CONSTANT_BUFFER + 64), nullptr);
}

}  // namespace
}  // namespace vgpu::gpu
