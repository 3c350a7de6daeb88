// SPDX-License-Identifier: GPL-2.0-or-later
// Every built-in kernel computes the same bits wherever its launch is cut
// (docs/spec/vgpu.md §10.5): whole, in slices of 1, 3, 7 or 64 thread
// blocks, and in timed pieces of two sizes. Timed pieces in real time end
// where the host's speed says, so a result that depended on the cut would
// differ from run to run, and from the native run, under load.
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/engines/testing/compute_test.h"

namespace vgpu::gpu {
namespace {

using namespace testing;  // the fixture, its helpers and the compute class names (compute_test.h)

// One buffer the kernel writes (and may read first, as sgemm's C with
// beta != 0): its address and the contents each run starts from.
struct Output {
  uint64_t va;
  std::vector<float> init;
};

struct Cut {
  uint32_t slice_blocks;
  uint64_t slice_ns;  // a timed slice (virtual time: the pieces' sizes follow the cost model)
};

class SliceBitsTest : public ComputeTest {
 protected:
  void SetUp() override {
    ComputeTest::SetUp();
    if (device_engines_) GTEST_SKIP() << "a device back end runs work whole";
  }

  // The launch whole, then cut each way, each run from the same outputs;
  // every cut's outputs equal the whole launch's bit for bit.
  template <typename Args>
  void expect_same_bits_wherever_cut(Kernel kernel, const Args& args, const std::vector<Output>& outputs) {
    const auto run_cut = [&](Cut cut) {
      for (const Output& o : outputs) write_vec(o.va, o.init);
      slice_blocks_ = cut.slice_blocks;
      slice_ns_ = cut.slice_ns;
      const int pieces_before = pieces_;
      EXPECT_TRUE(run(kernel, args).has_value());
      std::vector<std::vector<float>> got;
      for (const Output& o : outputs) got.push_back(read_vec<float>(o.va, o.init.size()));
      return std::pair{got, pieces_ - pieces_before};
    };
    const uint64_t start = clock_.now_ns();
    const auto [whole, whole_pieces] = run_cut({0, 0});
    ASSERT_EQ(whole_pieces, 0);
    const uint64_t work_ns = clock_.now_ns() - start - cost_.launch_ns;
    for (const Cut cut : {Cut{1, 0}, Cut{3, 0}, Cut{7, 0}, Cut{64, 0}, Cut{0, work_ns / 5}, Cut{0, work_ns / 13}}) {
      const auto [sliced, pieces] = run_cut(cut);
      EXPECT_GE(pieces, 2) << "slice_blocks " << cut.slice_blocks << ", slice_ns " << cut.slice_ns;
      for (size_t i = 0; i < outputs.size(); ++i) {
        size_t differ = 0;
        for (size_t e = 0; e < whole[i].size(); ++e)
          differ += std::memcmp(&whole[i][e], &sliced[i][e], sizeof(float)) != 0 ? 1 : 0;
        EXPECT_EQ(differ, 0u) << "of " << whole[i].size() << " elements of output " << i << ", slice_blocks "
                              << cut.slice_blocks << ", slice_ns " << cut.slice_ns;
      }
    }
  }

  // conv2d over ramps of input and filter into a zeroed output: two square
  // images of `channels` channels, `side` x `side`, a square filter of
  // `filter` x `filter` with padding `pad` and unit stride, and more output
  // channels than one call of the host's BLAS is given at a time
  // (kernels::CONV2D_TILE_CHANNELS).
  void expect_conv2d_same_bits_wherever_cut(uint32_t channels, uint32_t side, uint32_t filter, uint32_t pad) {
    cls::Conv2dArgs args{};
    args.n = 2;
    args.c = channels;
    args.h = args.w = side;
    args.k = kernels::CONV2D_TILE_CHANNELS + 8;
    args.r = args.s = filter;
    args.pad_h = args.pad_w = pad;
    args.stride_h = args.stride_w = 1;
    const size_t out = size_t{args.n} * args.k * kernels::conv2d_out_h(args) * kernels::conv2d_out_w(args);
    args.input = buffer(ramp(size_t{args.n} * args.c * args.h * args.w, 0.37f, 0.0f));
    args.filter = buffer(ramp(size_t{args.k} * args.c * args.r * args.s, 0.11f, 0.1f));
    args.output = buffer(std::vector<float>(out, 0.0f));
    expect_same_bits_wherever_cut(Kernel::conv2d, args, {{args.output, std::vector<float>(out, 0.0f)}});
  }
};

TEST_F(SliceBitsTest, FillSaxpyMadd) {
  grid_x_ = 97;
  constexpr uint32_t N = 5000;
  const auto x = ramp(N, 0.37f, 0.0f), y = ramp(N, 0.11f, 1.0f);
  const uint64_t dst = buffer(std::vector<float>(N, 0.0f));
  expect_same_bits_wherever_cut(Kernel::fill, cls::FillArgs{dst, N, 2.5f}, {{dst, std::vector<float>(N, 0.0f)}});
  const uint64_t xv = buffer(x), yv = buffer(y);
  expect_same_bits_wherever_cut(Kernel::saxpy, cls::SaxpyArgs{xv, yv, N, 1.7f}, {{yv, y}});
  const uint64_t cv = buffer(std::vector<float>(N, 0.0f));
  expect_same_bits_wherever_cut(Kernel::madd, cls::MaddArgs{xv, yv, cv, 50, N / 50},
                                {{cv, std::vector<float>(N, 0.0f)}});
}

// Two row tiles by two column tiles of C, the last of each partial, with
// beta != 0 (C is read too).
TEST_F(SliceBitsTest, Sgemm) {
  grid_x_ = 97;
  constexpr uint32_t M = kernels::SGEMM_TILE_ROWS + 9, N = kernels::SGEMM_TILE_COLS + 31, K = 40;
  const auto a = ramp(M * K, 0.37f, 0.0f), b = ramp(K * N, 0.11f, 0.2f), c = ramp(M * N, 0.05f, 1.0f);
  const uint64_t cv = buffer(c);
  expect_same_bits_wherever_cut(Kernel::sgemm, cls::SgemmArgs{buffer(a), buffer(b), cv, M, N, K, 1.5f, 0.5f, 0},
                                {{cv, c}});
}

// A 3 x 3 filter with padding (im2col): a cut inside an image's channels
// must not change how any output element is summed. (Bands of output
// positions: gpu/kernels/kernels_test.cc, whose data need not fit this GPU
// memory.)
TEST_F(SliceBitsTest, Conv2d) {
  grid_x_ = 97;
  expect_conv2d_same_bits_wherever_cut(8, 34, 3, 1);
}

// A 1 x 1 filter with unit stride (the image is the column matrix).
TEST_F(SliceBitsTest, Conv2dPointwise) {
  grid_x_ = 97;
  expect_conv2d_same_bits_wherever_cut(40, 30, 1, 0);
}

TEST_F(SliceBitsTest, Mriq) {
  grid_x_ = 97;
  constexpr uint32_t K = 64, X = 3000;
  const auto kx = ramp(K, 0.1f, 0.0f), ky = ramp(K, 0.2f, 0.0f), kz = ramp(K, 0.3f, 0.0f), phi = ramp(K, 0.4f, 1.0f);
  const auto x = ramp(X, 0.05f, 0.0f), y = ramp(X, 0.06f, 0.0f), z = ramp(X, 0.07f, 0.0f);
  const std::vector<float> zero(X, 0.0f);
  const cls::MriqArgs args{buffer(kx), buffer(ky),   buffer(kz),   buffer(phi), buffer(x), buffer(y),
                           buffer(z),  buffer(zero), buffer(zero), K,           X};
  expect_same_bits_wherever_cut(Kernel::mriq, args, {{args.qr, zero}, {args.qi, zero}});
}

}  // namespace
}  // namespace vgpu::gpu
