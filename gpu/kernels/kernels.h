// SPDX-License-Identifier: GPL-2.0-or-later
// The built-in compute kernels (docs/spec/vgpu.md, "Built-in kernels"),
// run by the model's compute engine on host views of GPU memory, and
// their modeled cost for virtual time.
#pragma once

#include <cstdint>
#include <span>

#include "gpu/kernels/tile_pool.h"
#include "vgpu/classes.h"

namespace vgpu::gpu::kernels {

// Each takes host views whose sizes the compute engine has checked against
// the arguments (footprint() in gpu/kernels/footprint.h). Inputs and
// outputs may alias (a guest can point them at the same memory): results
// are then unspecified but every access stays inside the checked views.
// Degenerate sizes (a zero dimension) are no-ops, except that sgemm with
// k == 0 still scales C by beta. sgemm and conv2d do nothing when their
// arguments are outside what footprint() accepts.
void fill(std::span<float> dst, float value);
void saxpy(float a, std::span<const float> x, std::span<float> y);
void madd(std::span<const float> a, std::span<const float> b, std::span<float> c);
void sgemm(const cls::SgemmArgs& args, const float* a, const float* b, float* c);
// sgemm is computed in tiles of C of SGEMM_TILE_ROWS x SGEMM_TILE_COLS,
// whole or in pieces: OpenBLAS's result for an element depends on the
// block of C it is asked for (one 512x6000x2816 product differs from the
// same product by 64-column blocks in 23% of its elements), so a launch
// in pieces of tiles computes bit for bit what it computes whole. A tile
// reads its rows of A and its columns of B once. Tiles run side by side on
// the tile pool, each one single-threaded BLAS call (tile_pool.h), so a
// tile's bits do not depend on OpenBLAS's thread count either; a tile is
// small enough (gemm4's, 64 x 256 x 2816, is 92 MFLOP) that one core
// computes it in a fraction of a slice.
// A launch with fewer than MIN_TILES such tiles is cut finer, down to
// SGEMM_MIN_TILE_ROWS x SGEMM_MIN_TILE_COLS (columns halved first), so
// that a small product still spreads over the pool; the tile shape is a
// function of the launch alone.
inline constexpr uint32_t SGEMM_TILE_ROWS = 64;
inline constexpr uint32_t SGEMM_TILE_COLS = 256;
inline constexpr uint32_t SGEMM_MIN_TILE_ROWS = 16;
inline constexpr uint32_t SGEMM_MIN_TILE_COLS = 64;
inline constexpr uint64_t MIN_TILES = 32;
// The tiles of C, in row-major order of tiles (0 when sgemm does nothing).
uint64_t sgemm_tiles(const cls::SgemmArgs& args);
// Tiles [first, first + count) of C, as one job of the tile pool, until
// `stop` ends it (tile_pool.h: a timed piece whose time is up); returns
// how many tiles, from first, ran.
uint64_t sgemm_tiles_run(const cls::SgemmArgs& args, const float* a, const float* b, float* c, uint64_t first,
                         uint64_t count, const TileStop& stop = {});
void conv2d(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output);
// conv2d is computed in tiles of its output, whole or in pieces: per
// image, CONV2D_TILE_CHANNELS output channels by a band of at most
// CONV2D_TILE_COLUMNS output positions (fewer where the band's im2col
// columns would pass the 4 MiB workspace each tile thread has), one
// single-threaded BLAS call each, run side by side on the tile pool (a
// band's tiles on one thread, after it builds the band's columns).
// As for sgemm, the host BLAS's result for an element depends on the
// block it is asked for (a launch cut inside an image's channels differed
// from the whole one in 7-67% of its elements), so a launch in pieces of
// tiles computes bit for bit what it computes whole. A tile of the
// DeepBench shapes is 6-52 MFLOP (conv4, conv1).
// Bands are halved, down to CONV2D_MIN_TILE_COLUMNS positions, while the
// launch has fewer than MIN_TILES tasks for the pool (a band, or a tile
// of a pointwise launch).
inline constexpr uint32_t CONV2D_TILE_CHANNELS = 128;
inline constexpr uint32_t CONV2D_TILE_COLUMNS = 512;
inline constexpr uint32_t CONV2D_MIN_TILE_COLUMNS = 64;
// The tiles of the output, image by image, each image's band by band and
// each band's channels tile by tile (0 when conv2d does nothing).
uint64_t conv2d_tiles(const cls::Conv2dArgs& args);
// Tiles [first, first + count) of the output, as one job of the tile
// pool, until `stop` ends it (asked with the tiles taken so far, a band's
// tiles at a time); returns how many tiles, from first, ran.
uint64_t conv2d_tiles_run(const cls::Conv2dArgs& args, const float* input, const float* filter, float* output,
                          uint64_t first, uint64_t count, const TileStop& stop = {});
void mriq(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz, const float* phi_mag,
          const float* x, const float* y, const float* z, float* qr, float* qi);

// Output height and width of a convolution; both 0 when the arguments are
// invalid: a zero size or stride, a filter larger than the padded input,
// or an output dimension that does not fit in 32 bits.
uint32_t conv2d_out_h(const cls::Conv2dArgs& a);
uint32_t conv2d_out_w(const cls::Conv2dArgs& a);

// Modeled cost in nanoseconds (docs/spec/vgpu.md, "Time and the cost model").
struct CostModel {
  double flops_per_ns = 1000.0;            // 1 TFLOP/s single precision (Quadro 6000 class)
  double bytes_per_ns = 144.0;             // 144 GB/s VRAM bandwidth
  uint64_t launch_ns = 5000;               // fixed cost per launch
  double warp_instructions_per_ns = 16.0;  // user kernels (PTX): 14 SMs issuing a warp instruction a cycle
};
uint64_t sgemm_cost_ns(const CostModel& m, const cls::SgemmArgs& a);
uint64_t conv2d_cost_ns(const CostModel& m, const cls::Conv2dArgs& a);
uint64_t mriq_cost_ns(const CostModel& m, uint32_t num_k, uint32_t num_x);
uint64_t stream_cost_ns(const CostModel& m, uint64_t bytes);  // fill, saxpy, madd, copies
// A spin kernel costs exactly its requested duration (no launch_ns), so
// scheduling experiments get the time they asked for.
uint64_t spin_cost_ns(const CostModel& m, uint64_t duration_ns);
// Every cost saturates at UINT64_MAX instead of overflowing; a CostModel
// with a rate that is not positive and finite makes any non-zero work cost
// UINT64_MAX. Invalid conv2d arguments cost launch_ns only.

}  // namespace vgpu::gpu::kernels
