// SPDX-License-Identifier: GPL-2.0-or-later
// Each kernel against the naive double-precision reference on small inputs.
// Tolerances, per kernel:
//  - fill, saxpy, madd: exact (same float operations, elementwise).
//  - sgemm, conv2d: norm-wise relative error ||C - Cref|| / ||Cref|| < 1e-5
//    against double accumulation. Float accumulation of K products has a
//    worst-case error bound of about K * 2^-24; for K <= ~150 and random
//    data of both signs the observed error is ~1e-7, well under 1e-5.
//  - mriq: norm-wise relative error < 1e-4. The phase t = kx x + ky y + kz z
//    is computed in float (as Parboil does), so each term carries a phase
//    error of about 2 pi |t| 2^-24 (|t| <= ~12 here, ~5e-6 rad), and Q is a
//    sum of oscillating terms that cancel, which amplifies relative error;
//    1e-4 is what this float algorithm honestly meets (observed ~1e-6).
//    Where the phase is exact (integer-scaled inputs) the sin/cos
//    polynomial itself is checked to 2e-6 absolute per term.
#include "gpu/kernels/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "common/random.h"
#include "gpu/kernels/conv2d_detail.h"
#include "gpu/kernels/reference.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr double GEMM_TOLERANCE = 1e-5;
constexpr double MRIQ_TOLERANCE = 1e-4;
constexpr double SINCOS_ABS_TOLERANCE = 2e-6;


// ||got - want|| / ||want|| in double.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double{got[i]} - double{want[i]};
    diff += d * d;
    norm += double{want[i]} * double{want[i]};
  }
  return std::sqrt(diff / norm);
}

// ------------------------------------------------------------ elementwise

TEST(Fill, WritesValueToEveryElement) {
  std::vector<float> got(37, 1.0f), want(37, 1.0f);
  fill(got, -2.5f);
  reference::fill(want, -2.5f);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got[36], -2.5f);
}

TEST(Saxpy, MatchesReferenceExactly) {
  const auto x = random_floats(1000, 1);
  auto got = random_floats(1000, 2);
  auto want = got;
  saxpy(0.75f, x, got);
  reference::saxpy(0.75f, x, want);
  EXPECT_EQ(got, want);
}

TEST(Madd, MatchesReferenceExactly) {
  const auto a = random_floats(17 * 23, 3), b = random_floats(17 * 23, 4);
  std::vector<float> got(a.size()), want(a.size());
  madd(a, b, got);
  reference::madd(a, b, want);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got[5], a[5] + b[5]);
}

// ------------------------------------------------------------ sgemm

struct GemmCase {
  cls::SgemmArgs args;
  std::vector<float> a, b, c;
};

GemmCase gemm_case(uint32_t m, uint32_t n, uint32_t k, float alpha, float beta) {
  GemmCase g{};
  g.args.m = m;
  g.args.n = n;
  g.args.k = k;
  g.args.alpha = alpha;
  g.args.beta = beta;
  g.a = random_floats(size_t{m} * k, 10);
  g.b = random_floats(size_t{k} * n, 11);
  g.c = random_floats(size_t{m} * n, 12);
  return g;
}

double sgemm_error(const GemmCase& g) {
  auto got = g.c, want = g.c;
  sgemm(g.args, g.a.data(), g.b.data(), got.data());
  reference::sgemm(g.args, g.a.data(), g.b.data(), want.data());
  return relative_error(got, want);
}

TEST(Sgemm, Square64x48x32MatchesReference) {
  EXPECT_LT(sgemm_error(gemm_case(64, 48, 32, 1.0f, 0.0f)), GEMM_TOLERANCE);
}

TEST(Sgemm, NonSquareWithAlphaAndBetaMatchesReference) {
  EXPECT_LT(sgemm_error(gemm_case(37, 19, 53, 1.5f, -0.75f)), GEMM_TOLERANCE);
}

TEST(Sgemm, ComputesKnownProduct) {
  cls::SgemmArgs args{};
  args.m = 2, args.n = 2, args.k = 3, args.alpha = 2.0f, args.beta = 1.0f;
  const float a[] = {1, 2, 3, 4, 5, 6};     // 2x3
  const float b[] = {7, 8, 9, 10, 11, 12};  // 3x2
  float c[] = {1, 1, 1, 1};
  sgemm(args, a, b, c);
  // A*B = [[58, 64], [139, 154]]
  EXPECT_EQ(c[0], 117.0f);
  EXPECT_EQ(c[1], 129.0f);
  EXPECT_EQ(c[2], 279.0f);
  EXPECT_EQ(c[3], 309.0f);
}

TEST(Sgemm, BetaZeroDoesNotReadC) {
  auto g = gemm_case(8, 8, 8, 1.0f, 0.0f);
  std::fill(g.c.begin(), g.c.end(), std::numeric_limits<float>::quiet_NaN());
  sgemm(g.args, g.a.data(), g.b.data(), g.c.data());
  for (float v : g.c) EXPECT_FALSE(std::isnan(v));
}

TEST(Sgemm, ZeroKScalesCByBeta) {
  cls::SgemmArgs args{};
  args.m = 2, args.n = 3, args.k = 0, args.alpha = 1.0f, args.beta = 0.5f;
  std::vector<float> c{2, 4, 6, 8, 10, 12};
  sgemm(args, nullptr, nullptr, c.data());
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(Sgemm, ZeroRowsLeavesMemoryUntouched) {
  cls::SgemmArgs args{};
  args.m = 0, args.n = 3, args.k = 3, args.alpha = 1.0f, args.beta = 0.0f;
  std::vector<float> b(9, 1.0f), c(3, 7.0f);  // c: memory beyond the empty C
  sgemm(args, nullptr, b.data(), c.data());
  EXPECT_EQ(c, std::vector<float>(3, 7.0f));
}

// ------------------------------------------------------------ conv2d

cls::Conv2dArgs conv(uint32_t n, uint32_t c, uint32_t h, uint32_t w, uint32_t k, uint32_t r, uint32_t s, uint32_t pad_h,
                     uint32_t pad_w, uint32_t stride_h, uint32_t stride_w) {
  cls::Conv2dArgs a{};
  a.n = n, a.c = c, a.h = h, a.w = w, a.k = k, a.r = r, a.s = s;
  a.pad_h = pad_h, a.pad_w = pad_w, a.stride_h = stride_h, a.stride_w = stride_w;
  return a;
}

struct ConvRun {
  std::vector<float> got, want;
};

ConvRun run_conv(const cls::Conv2dArgs& a, size_t workspace_floats = 0) {
  const auto input = random_floats(size_t{a.n} * a.c * a.h * a.w, 20);
  const auto filter = random_floats(size_t{a.k} * a.c * a.r * a.s, 21);
  const size_t out = size_t{a.n} * a.k * conv2d_out_h(a) * conv2d_out_w(a);
  ConvRun run{std::vector<float>(out, 7.0f), std::vector<float>(out, 7.0f)};
  if (workspace_floats)
    detail::conv2d_banded(a, input.data(), filter.data(), run.got.data(), workspace_floats);
  else
    conv2d(a, input.data(), filter.data(), run.got.data());
  reference::conv2d(a, input.data(), filter.data(), run.want.data());
  return run;
}

// Shapes checked against the reference through the whole-launch path.
struct ConvCase {
  const char* name;
  cls::Conv2dArgs args;
  friend void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }
};

class Conv2dMatchesReference : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dMatchesReference, WithinGemmTolerance) {
  const auto run = run_conv(GetParam().args);
  EXPECT_LT(relative_error(run.got, run.want), GEMM_TOLERANCE);
}

INSTANTIATE_TEST_SUITE_P(Conv2d, Conv2dMatchesReference,
                         ::testing::Values(ConvCase{"PaddingAndStride2", conv(2, 3, 11, 13, 4, 3, 5, 1, 2, 2, 2)},
                                           // DeepBench conv2 (224x224x3, 7x7, K=64, pad 3, stride 2) at 32x32, K=16.
                                           ConvCase{"Conv2ShapeReduced", conv(1, 3, 32, 32, 16, 7, 7, 3, 3, 2, 2)},
                                           ConvCase{"PaddingWiderThanImage", conv(1, 2, 3, 2, 2, 3, 6, 2, 4, 1, 3)},
                                           // 1x1, stride 1, no padding (DeepBench conv4 reduced): the no-copy path.
                                           ConvCase{"PointwiseFilter", conv(2, 16, 7, 7, 32, 1, 1, 0, 0, 1, 1)}),
                         [](const ::testing::TestParamInfo<ConvCase>& p) { return std::string(p.param.name); });

TEST(Conv2d, FilterHeightRAndWidthSAreNotSwapped) {
  // DeepBench conv1 proportions (R=5 tall, S=10 wide), reduced.
  const auto a = conv(2, 4, 19, 41, 8, 5, 10, 0, 0, 2, 2);
  ASSERT_EQ(conv2d_out_h(a), 8u);
  ASSERT_EQ(conv2d_out_w(a), 16u);
  const auto run = run_conv(a);
  EXPECT_LT(relative_error(run.got, run.want), GEMM_TOLERANCE);
}

TEST(Conv2d, BandsThatSplitOutputRowsMatchReference) {
  // 7 output positions per band against Q = 6: bands start mid-row.
  const auto a = conv(2, 2, 9, 11, 3, 3, 3, 1, 1, 2, 2);
  const auto run = run_conv(a, size_t{7} * 2 * 3 * 3);
  EXPECT_LT(relative_error(run.got, run.want), GEMM_TOLERANCE);
}

// Two images of 9 bands of output positions by 2 tiles of channels (the
// last of each partial): the tiles run in any runs give the whole
// launch's bits, since each tile is the same BLAS call.
TEST(Conv2d, TilesInAnyRunsEqualTheWholeBitForBit) {
  const auto a = conv(2, 8, 23, 23, CONV2D_TILE_CHANNELS + 8, 3, 3, 1, 1, 1, 1);
  static_assert(23 * 23 > CONV2D_TILE_COLUMNS && 23 * 23 < 2 * CONV2D_TILE_COLUMNS);
  // Bands of 64 positions (halved from 512 until the launch has 18 bands,
  // the finest they go below MIN_TILES tasks): 9 per image.
  ASSERT_EQ(conv2d_tiles(a), 2u * 9 * 2);
  const auto input = random_floats(size_t{a.n} * a.c * a.h * a.w, 20);
  const auto filter = random_floats(size_t{a.k} * a.c * a.r * a.s, 21);
  const size_t out = size_t{a.n} * a.k * conv2d_out_h(a) * conv2d_out_w(a);
  std::vector<float> whole(out, 7.0f);
  conv2d(a, input.data(), filter.data(), whole.data());
  for (uint64_t run : {1, 3, 5}) {
    std::vector<float> pieces(out, 7.0f);
    for (uint64_t first = 0; first < conv2d_tiles(a); first += run)
      conv2d_tiles_run(a, input.data(), filter.data(), pieces.data(), first, run);
    EXPECT_EQ(std::memcmp(pieces.data(), whole.data(), out * sizeof(float)), 0) << "runs of " << run << " tiles";
  }
}

// A run of no tiles, at the start of the launch or inside it, writes
// nothing (a slice of blocks that holds no whole tile asks for one).
TEST(Conv2d, ARunOfNoTilesWritesNothing) {
  for (const auto& a : {conv(2, 8, 23, 23, 16, 3, 3, 1, 1, 1, 1), conv(2, 8, 7, 7, 16, 1, 1, 0, 0, 1, 1)}) {
    const auto input = random_floats(size_t{a.n} * a.c * a.h * a.w, 20);
    const auto filter = random_floats(size_t{a.k} * a.c * a.r * a.s, 21);
    const size_t out = size_t{a.n} * a.k * conv2d_out_h(a) * conv2d_out_w(a);
    std::vector<float> got(out, 7.0f);
    conv2d_tiles_run(a, input.data(), filter.data(), got.data(), 0, 0);
    conv2d_tiles_run(a, input.data(), filter.data(), got.data(), 1, 0);
    EXPECT_EQ(got, std::vector<float>(out, 7.0f));
  }
}

// A small product is cut finer so that it still spreads over the tile
// threads: DeepBench gemm2 (35 x 700) in tiles of 16 x 64, not one row of
// three 64 x 256 tiles; a large one keeps the full tiles.
TEST(Sgemm, ASmallProductIsCutIntoAtLeastMinTiles) {
  cls::SgemmArgs g{};
  g.m = 35, g.n = 700, g.k = 2048, g.alpha = 1.0f;
  EXPECT_EQ(sgemm_tiles(g), 3u * 11);
  g.m = 512, g.n = 6000, g.k = 2816;
  EXPECT_EQ(sgemm_tiles(g), (512u / SGEMM_TILE_ROWS) * ((6000u + SGEMM_TILE_COLS - 1) / SGEMM_TILE_COLS));
  static_assert(3 * 11 >= MIN_TILES);
}

TEST(Conv2d, InvalidShapeLeavesOutputUntouched) {
  auto a = conv(1, 1, 4, 4, 1, 3, 3, 0, 0, 0, 1);  // stride 0
  std::vector<float> in(16, 1.0f), filter(9, 1.0f), out(4, 7.0f);
  conv2d(a, in.data(), filter.data(), out.data());
  EXPECT_EQ(out, std::vector<float>(4, 7.0f));
}

TEST(Conv2dShape, DeepBenchConv1GivesP38Q166) {
  const auto a = conv(4, 32, 79, 341, 32, 5, 10, 0, 0, 2, 2);
  EXPECT_EQ(conv2d_out_h(a), 38u);
  EXPECT_EQ(conv2d_out_w(a), 166u);
}

TEST(Conv2dShape, PaddingLetsFilterFit) {
  const auto a = conv(1, 1, 2, 2, 1, 5, 5, 2, 2, 1, 1);
  EXPECT_EQ(conv2d_out_h(a), 2u);
  EXPECT_EQ(conv2d_out_w(a), 2u);
}

TEST(Conv2dShape, InvalidArgumentsGiveZero) {
  const cls::Conv2dArgs bad[] = {
      conv(0, 1, 4, 4, 1, 3, 3, 0, 0, 1, 1),  // no images
      conv(1, 0, 4, 4, 1, 3, 3, 0, 0, 1, 1),  // no channels
      conv(1, 1, 0, 4, 1, 3, 3, 0, 0, 1, 1),  // zero height
      conv(1, 1, 4, 4, 0, 3, 3, 0, 0, 1, 1),  // no filters
      conv(1, 1, 4, 4, 1, 0, 3, 0, 0, 1, 1),  // zero filter height
      conv(1, 1, 4, 4, 1, 3, 3, 0, 0, 1, 0),  // stride 0
      conv(1, 1, 4, 4, 1, 5, 3, 0, 0, 1, 1),  // filter taller than input
      conv(1, 1, 4, 4, 1, 3, 7, 1, 1, 1, 1),  // filter wider than padded input
  };
  for (const auto& a : bad) {
    EXPECT_EQ(conv2d_out_h(a), 0u);
    EXPECT_EQ(conv2d_out_w(a), 0u);
  }
}

TEST(Conv2dShape, HugePaddingDoesNotOverflow) {
  const auto a = conv(1, 1, 1, 1, 1, 1, 1, UINT32_MAX, 0, 1, 1);
  EXPECT_EQ(conv2d_out_h(a), 0u);  // 2^33 rows do not fit in 32 bits
}

// ------------------------------------------------------------ mriq

struct MriqData {
  std::vector<float> kx, ky, kz, phi, x, y, z;
};

MriqData mriq_data(uint32_t num_k, uint32_t num_x) {
  return MriqData{random_floats(num_k, 30, -8.0f, 8.0f), random_floats(num_k, 31, -8.0f, 8.0f),
                  random_floats(num_k, 32, -8.0f, 8.0f), random_floats(num_k, 33, 0.0f, 1.0f),
                  random_floats(num_x, 34, -0.5f, 0.5f), random_floats(num_x, 35, -0.5f, 0.5f),
                  random_floats(num_x, 36, -0.5f, 0.5f)};
}

struct MriqOut {
  std::vector<float> qr, qi;
};

MriqOut run_mriq(const MriqData& d, bool use_reference) {
  const auto num_k = static_cast<uint32_t>(d.kx.size());
  const auto num_x = static_cast<uint32_t>(d.x.size());
  MriqOut o{std::vector<float>(num_x), std::vector<float>(num_x)};
  auto* fn = use_reference ? &reference::mriq : &mriq;
  fn(num_k, num_x, d.kx.data(), d.ky.data(), d.kz.data(), d.phi.data(), d.x.data(), d.y.data(), d.z.data(), o.qr.data(),
     o.qi.data());
  return o;
}

TEST(Mriq, MatchesReferenceWithinTolerance) {
  // 300 x values: one full tile of 256 and a partial one.
  const auto d = mriq_data(200, 300);
  const auto got = run_mriq(d, false), want = run_mriq(d, true);
  EXPECT_LT(relative_error(got.qr, want.qr), MRIQ_TOLERANCE);
  EXPECT_LT(relative_error(got.qi, want.qi), MRIQ_TOLERANCE);
}

TEST(Mriq, SinCosAccurateOverManyTurns) {
  // One k with kx = 1, phi = 1: Q[x] = (cos, sin)(2 pi x). x = i/64 is exact
  // in float, so the phase is exact and this checks the reduction and the
  // polynomial in every quadrant, up to 40 turns either way.
  std::vector<float> xs;
  for (int i = -2560; i <= 2560; i += 3) xs.push_back(static_cast<float>(i) / 64.0f);
  const std::vector<float> zeros(xs.size(), 0.0f);
  const MriqData d{{1.0f}, {0.0f}, {0.0f}, {1.0f}, xs, zeros, zeros};
  const auto got = run_mriq(d, false), want = run_mriq(d, true);
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(got.qr[i], want.qr[i], SINCOS_ABS_TOLERANCE) << "x = " << xs[i];
    EXPECT_NEAR(got.qi[i], want.qi[i], SINCOS_ABS_TOLERANCE) << "x = " << xs[i];
  }
}

TEST(Mriq, LargePhaseIsReducedExactly) {
  // t = 1000.125 turns, exact in float: cos = sin = sqrt(1/2).
  const MriqData d{{1000.125f}, {0.0f}, {0.0f}, {2.0f}, {1.0f}, {0.0f}, {0.0f}};
  const auto got = run_mriq(d, false);
  EXPECT_NEAR(got.qr[0], std::sqrt(2.0f), 1e-6f);
  EXPECT_NEAR(got.qi[0], std::sqrt(2.0f), 1e-6f);
}

TEST(Mriq, NanOrInfinitePhaseGivesNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const MriqData with_nan{{nan}, {0.0f}, {0.0f}, {1.0f}, {1.0f}, {0.0f}, {0.0f}};
  const MriqData with_inf{{0.0f}, {inf}, {0.0f}, {1.0f}, {0.0f}, {1.0f}, {0.0f}};
  EXPECT_TRUE(std::isnan(run_mriq(with_nan, false).qr[0]));
  EXPECT_TRUE(std::isnan(run_mriq(with_inf, false).qi[0]));
}

TEST(Mriq, ZeroKGivesZero) {
  const MriqData d{{}, {}, {}, {}, {0.3f}, {0.1f}, {0.2f}};
  const auto got = run_mriq(d, false);
  EXPECT_EQ(got.qr[0], 0.0f);
  EXPECT_EQ(got.qi[0], 0.0f);
}

}  // namespace
}  // namespace vgpu::gpu::kernels
