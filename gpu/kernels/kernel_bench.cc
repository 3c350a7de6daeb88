// SPDX-License-Identifier: GPL-2.0-or-later
// Kernel-level benchmark (not a test; it prints figures, asserts nothing).
//  - sgemm 1024x1024x1024 through kernels::sgemm and straight through
//    cblas_sgemm: median of 5 runs each, the two interleaved so that load
//    from other processes hits both alike; GFLOP/s and their ratio.
//  - conv2d on the DeepBench shapes of seed-workloads.json and mriq at a
//    Parboil-like size, through the kernel functions: median of 5.
// Prints one JSON line, then a readable table.
//  kernel_bench --tiles: what computing sgemm and conv2d in tiles (their
//    units, whole or sliced: kernels.h) costs a lone launch against one
//    OpenBLAS call (sgemm) or one per image (conv2d, after the image's
//    whole im2col matrix): the DeepBench gemm and conv shapes, the two
//    forms interleaved, median of 5 each. Tiles run on the tile pool
//    (single-threaded BLAS calls); the one call gets as many OpenBLAS
//    threads as the pool has (tile_pool.h: with_all_blas_threads).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/random.h"
#include "gpu/kernels/conv2d_detail.h"
#include "gpu/kernels/kernels.h"
#include "gpu/kernels/tile_pool.h"

namespace {

using vgpu::random_floats;
using vgpu::cls::Conv2dArgs;
using vgpu::cls::SgemmArgs;
namespace kernels = vgpu::gpu::kernels;

constexpr int RUNS = 5;
constexpr uint32_t GEMM_SIZE = 1024;
constexpr uint32_t MRIQ_K = 2048;   // Parboil's 64^3 data set has 2048 k-space samples
constexpr uint32_t MRIQ_X = 32768;  // of its 262144 voxels: an eighth, to keep runs short


template <typename F>
double seconds(F&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double median_seconds(F&& body) {
  body();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < RUNS; ++i) t.push_back(seconds(body));
  return median(t);
}

// The median seconds of `a` and of `b` over RUNS runs each, the two taking
// turns so that load on the machine falls on both alike; one untimed run of
// each first (OpenBLAS threads, page faults).
template <typename F, typename G>
std::pair<double, double> interleaved_medians(F&& a, G&& b) {
  a();
  b();
  std::vector<double> ta, tb;
  for (int i = 0; i < RUNS; ++i) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
  }
  return {median(ta), median(tb)};
}

struct GemmResult {
  double kernel_s, blas_s;
};

GemmResult bench_sgemm() {
  const size_t elems = size_t{GEMM_SIZE} * GEMM_SIZE;
  const auto a = random_floats(elems, 1, -1.0f, 1.0f);
  const auto b = random_floats(elems, 2, -1.0f, 1.0f);
  std::vector<float> c(elems, 0.0f);
  SgemmArgs args{};
  args.m = GEMM_SIZE, args.n = GEMM_SIZE, args.k = GEMM_SIZE, args.alpha = 1.0f, args.beta = 0.0f;
  const int n = static_cast<int>(GEMM_SIZE);
  auto kernel = [&] { kernels::sgemm(args, a.data(), b.data(), c.data()); };
  auto blas = [&] {
    kernels::with_all_blas_threads([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(),
                  n);
    });
  };
  const auto [kernel_s, blas_s] = interleaved_medians(kernel, blas);
  return {kernel_s, blas_s};
}

struct ConvCase {
  const char* name;
  uint32_t w, h, c, n, r, s, k, pad_h, pad_w, stride_h, stride_w;
};

// DeepBench conv_bench shapes (seed-workloads.json, "conv2d").
constexpr ConvCase CONV_CASES[] = {
    {"conv1", 341, 79, 32, 4, 5, 10, 32, 0, 0, 2, 2},
    {"conv2", 224, 224, 3, 1, 7, 7, 64, 3, 3, 2, 2},
    {"conv3", 56, 56, 256, 1, 1, 1, 128, 0, 0, 2, 2},
    {"conv4", 7, 7, 512, 2, 1, 1, 2048, 0, 0, 1, 1},
};

struct ConvResult {
  const char* name;
  double s, gflop;
};

ConvResult bench_conv(const ConvCase& cc) {
  Conv2dArgs a{};
  a.n = cc.n, a.c = cc.c, a.h = cc.h, a.w = cc.w, a.k = cc.k, a.r = cc.r, a.s = cc.s;
  a.pad_h = cc.pad_h, a.pad_w = cc.pad_w, a.stride_h = cc.stride_h, a.stride_w = cc.stride_w;
  const double p = kernels::conv2d_out_h(a), q = kernels::conv2d_out_w(a);
  const auto in = random_floats(size_t{a.n} * a.c * a.h * a.w, 3, -1.0f, 1.0f);
  const auto filter = random_floats(size_t{a.k} * a.c * a.r * a.s, 4, -1.0f, 1.0f);
  std::vector<float> out(static_cast<size_t>(a.n * a.k * p * q));
  const double t = median_seconds([&] { kernels::conv2d(a, in.data(), filter.data(), out.data()); });
  const double flops = 2.0 * a.n * a.k * p * q * a.c * a.r * a.s;
  return {cc.name, t, flops / 1e9};
}

// Parboil's CPU computeQ as published (scalar cosf/sinf after scaling by
// 2 pi), for comparison with kernels::mriq.
void parboil_compute_q(uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
                       const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) {
  constexpr float PIx2 = 6.2831853071795864769252867665590058f;
  for (uint32_t i = 0; i < num_x; ++i) {
    float acc_r = 0.0f, acc_i = 0.0f;
    for (uint32_t k = 0; k < num_k; ++k) {
      const float arg = PIx2 * (kx[k] * x[i] + ky[k] * y[i] + kz[k] * z[i]);
      acc_r += phi_mag[k] * std::cos(arg);
      acc_i += phi_mag[k] * std::sin(arg);
    }
    qr[i] = acc_r;
    qi[i] = acc_i;
  }
}

struct MriqResult {
  double kernel_s, parboil_s;
};

MriqResult bench_mriq() {
  const auto kx = random_floats(MRIQ_K, 5, -32.0f, 32.0f), ky = random_floats(MRIQ_K, 6, -32.0f, 32.0f),
             kz = random_floats(MRIQ_K, 7, -32.0f, 32.0f), phi = random_floats(MRIQ_K, 8, 0.0f, 1.0f);
  const auto x = random_floats(MRIQ_X, 9, -0.5f, 0.5f), y = random_floats(MRIQ_X, 10, -0.5f, 0.5f),
             z = random_floats(MRIQ_X, 11, -0.5f, 0.5f);
  std::vector<float> qr(MRIQ_X), qi(MRIQ_X);
  const double kernel_s = median_seconds([&] {
    kernels::mriq(MRIQ_K, MRIQ_X, kx.data(), ky.data(), kz.data(), phi.data(), x.data(), y.data(), z.data(), qr.data(),
                  qi.data());
  });
  const double parboil_s = median_seconds([&] {
    parboil_compute_q(MRIQ_K, MRIQ_X, kx.data(), ky.data(), kz.data(), phi.data(), x.data(), y.data(), z.data(),
                      qr.data(), qi.data());
  });
  return {kernel_s, parboil_s};
}

// ---- --tiles: tiles against one BLAS call

struct TilesRow {
  std::string name;
  double tiled_s, one_call_s;
};

template <typename F, typename G>
TilesRow interleaved(std::string name, F&& tiled, G&& one_call) {
  const auto [tiled_s, one_call_s] = interleaved_medians(tiled, one_call);
  return {std::move(name), tiled_s, one_call_s};
}

struct GemmShape {
  const char* name;
  uint32_t m, n, k;
};

// testbed/workloads/registry.cc's DeepBench shapes, and 1024^3.
constexpr GemmShape GEMM_SHAPES[] = {
    {"gemm1", 5124, 700, 2048}, {"gemm2", 35, 700, 2048},        {"gemm3", 3072, 3000, 1024},
    {"gemm4", 512, 6000, 2816}, {"sgemm1024", 1024, 1024, 1024},
};

TilesRow tiles_sgemm(const GemmShape& g) {
  const auto a = random_floats(size_t{g.m} * g.k, 1, -1.0f, 1.0f);
  const auto b = random_floats(size_t{g.k} * g.n, 2, -1.0f, 1.0f);
  std::vector<float> c(size_t{g.m} * g.n, 0.0f);
  SgemmArgs args{};
  args.m = g.m, args.n = g.n, args.k = g.k, args.alpha = 1.0f, args.beta = 0.0f;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  return interleaved(
      g.name, [&] { kernels::sgemm(args, a.data(), b.data(), c.data()); },
      [&] {
        kernels::with_all_blas_threads([&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f,
                      c.data(), n);
        });
      });
}

TilesRow tiles_conv(const ConvCase& cc) {
  Conv2dArgs a{};
  a.n = cc.n, a.c = cc.c, a.h = cc.h, a.w = cc.w, a.k = cc.k, a.r = cc.r, a.s = cc.s;
  a.pad_h = cc.pad_h, a.pad_w = cc.pad_w, a.stride_h = cc.stride_h, a.stride_w = cc.stride_w;
  const int64_t pq = int64_t{kernels::conv2d_out_h(a)} * kernels::conv2d_out_w(a);
  const int64_t crs = int64_t{a.c} * a.r * a.s, chw = int64_t{a.c} * a.h * a.w;
  const auto in = random_floats(static_cast<size_t>(a.n * chw), 3, -1.0f, 1.0f);
  const auto filter = random_floats(static_cast<size_t>(a.k * crs), 4, -1.0f, 1.0f);
  std::vector<float> out(static_cast<size_t>(a.n * a.k * pq));
  std::vector<float> col(kernels::detail::conv2d_pointwise(a) ? 0 : static_cast<size_t>(crs * pq));
  const auto one_call = [&] {
    for (uint32_t i = 0; i < a.n; ++i) {
      const float* image = in.data() + i * chw;
      const float* columns = image;
      if (!col.empty()) {
        kernels::detail::conv2d_im2col(a, image, 0, pq, col.data());
        columns = col.data();
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(a.k), static_cast<int>(pq),
                  static_cast<int>(crs), 1.0f, filter.data(), static_cast<int>(crs), columns, static_cast<int>(pq),
                  0.0f, out.data() + i * a.k * pq, static_cast<int>(pq));
    }
  };
  return interleaved(
      cc.name, [&] { kernels::conv2d(a, in.data(), filter.data(), out.data()); },
      [&] { kernels::with_all_blas_threads(one_call); });
}

int tiles_main() {
  std::vector<TilesRow> rows;
  for (const GemmShape& g : GEMM_SHAPES) rows.push_back(tiles_sgemm(g));
  for (const ConvCase& cc : CONV_CASES) rows.push_back(tiles_conv(cc));
  nlohmann::ordered_json json_rows = nlohmann::ordered_json::array();
  for (const TilesRow& r : rows)
    json_rows.push_back({{"name", r.name},
                         {"tiled_median_s", r.tiled_s},
                         {"one_call_median_s", r.one_call_s},
                         {"ratio", r.tiled_s / r.one_call_s}});
  const unsigned workers = kernels::tile_workers();
  const nlohmann::ordered_json j = {{"bench", "kernel_tiles"},
                                    {"runs", RUNS},
                                    {"openblas_threads", workers},
                                    {"tile_workers", workers},
                                    {"openblas_core", openblas_get_corename()},
                                    {"rows", json_rows}};
  std::printf("%s\n", j.dump().c_str());
  std::printf("\nmedian of %d runs each, interleaved; tiles on %u tile threads, one call on %u OpenBLAS threads (%s)\n",
              RUNS, workers, workers, openblas_get_corename());
  std::printf("  %-10s %14s %16s %8s\n", "kernel", "tiles (ms)", "one call (ms)", "ratio");
  for (const TilesRow& r : rows)
    std::printf("  %-10s %14.3f %16.3f %8.3f\n", r.name.c_str(), r.tiled_s * 1e3, r.one_call_s * 1e3,
                r.tiled_s / r.one_call_s);
  return 0;
}

struct Figures {
  GemmResult gemm;
  std::vector<ConvResult> convs;
  MriqResult mriq;
  int threads = 0;
  double gemm_gflops(double seconds) const { return 2.0 * GEMM_SIZE * GEMM_SIZE * GEMM_SIZE / seconds / 1e9; }
  static double mriq_g_elements(double seconds) { return double{MRIQ_K} * MRIQ_X / seconds / 1e9; }
};

void print_json(const Figures& f) {
  const double gf_kernel = f.gemm_gflops(f.gemm.kernel_s), gf_blas = f.gemm_gflops(f.gemm.blas_s);
  nlohmann::ordered_json convs = nlohmann::ordered_json::array();
  for (const ConvResult& r : f.convs) convs.push_back({{"name", r.name}, {"median_s", r.s}, {"gflops", r.gflop / r.s}});
  const nlohmann::ordered_json j = {{"bench", "kernels"},
                                    {"runs", RUNS},
                                    {"openblas_threads", f.threads},
                                    {"sgemm",
                                     {{"m", GEMM_SIZE},
                                      {"n", GEMM_SIZE},
                                      {"k", GEMM_SIZE},
                                      {"kernel_median_s", f.gemm.kernel_s},
                                      {"cblas_median_s", f.gemm.blas_s},
                                      {"kernel_gflops", gf_kernel},
                                      {"cblas_gflops", gf_blas},
                                      {"ratio", gf_kernel / gf_blas}}},
                                    {"conv2d", convs},
                                    {"mriq",
                                     {{"num_k", MRIQ_K},
                                      {"num_x", MRIQ_X},
                                      {"median_s", f.mriq.kernel_s},
                                      {"g_elements_per_s", Figures::mriq_g_elements(f.mriq.kernel_s)},
                                      {"parboil_scalar_median_s", f.mriq.parboil_s}}}};
  std::printf("%s\n", j.dump().c_str());
}

void print_table(const Figures& f) {
  const double gf_kernel = f.gemm_gflops(f.gemm.kernel_s), gf_blas = f.gemm_gflops(f.gemm.blas_s);
  std::printf("\nmedian of %d runs, OpenBLAS threads: %d\n", RUNS, f.threads);
  std::printf("  %-34s %10s %12s\n", "kernel", "time (ms)", "rate");
  std::printf("  %-34s %10.3f %8.2f GFLOP/s\n", "sgemm 1024^3 kernels::sgemm", f.gemm.kernel_s * 1e3, gf_kernel);
  std::printf("  %-34s %10.3f %8.2f GFLOP/s\n", "sgemm 1024^3 cblas_sgemm (direct)", f.gemm.blas_s * 1e3, gf_blas);
  std::printf("  %-34s %10s %8.4f\n", "sgemm kernel / direct", "", gf_kernel / gf_blas);
  for (const ConvResult& r : f.convs)
    std::printf("  conv2d %-27s %10.3f %8.2f GFLOP/s\n", r.name, r.s * 1e3, r.gflop / r.s);
  std::printf("  mriq %4u k x %6u x %16s %10.3f %8.3f G elem/s\n", MRIQ_K, MRIQ_X, "", f.mriq.kernel_s * 1e3,
              Figures::mriq_g_elements(f.mriq.kernel_s));
  std::printf("  %-34s %10.3f %8.3f G elem/s\n", "mriq Parboil scalar cosf/sinf", f.mriq.parboil_s * 1e3,
              Figures::mriq_g_elements(f.mriq.parboil_s));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--tiles") return tiles_main();
  if (argc != 1) {
    std::fprintf(stderr, "usage: kernel_bench [--tiles]\n");
    return 2;
  }
  Figures f;
  f.gemm = bench_sgemm();
  for (const ConvCase& cc : CONV_CASES) f.convs.push_back(bench_conv(cc));
  f.mriq = bench_mriq();
  f.threads = static_cast<int>(kernels::tile_workers());  // OpenBLAS's threads for one call
  print_json(f);
  print_table(f);
  return 0;
}
