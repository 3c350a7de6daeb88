// SPDX-License-Identifier: GPL-2.0-or-later
// Kernel-level benchmark: sgemm 1024x1024x1024 through kernels::sgemm and
// straight through cblas_sgemm, median of 5 runs each (after one warm-up),
// printed as one JSON line and a table. Not a test: figures only.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "gpu/kernels/kernels.h"

namespace {

using vgpu::cls::SgemmArgs;
namespace kernels = vgpu::gpu::kernels;

constexpr int RUNS = 5;
constexpr uint32_t SIZE = 1024;

double median_seconds(const std::function<void()>& body) {
  body();   // warm-up: OpenBLAS thread start, page faults
  std::vector<double> times;
  for (int i = 0; i < RUNS; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    const auto stop = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(stop - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[RUNS / 2];
}

}  // namespace

int main() {
  const size_t elems = size_t{SIZE} * SIZE;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(elems), b(elems), c(elems, 0.0f);
  for (float& v : a) v = dist(gen);
  for (float& v : b) v = dist(gen);

  SgemmArgs args{};
  args.m = SIZE, args.n = SIZE, args.k = SIZE, args.alpha = 1.0f, args.beta = 0.0f;
  const int n = static_cast<int>(SIZE);

  const double t_kernel = median_seconds([&] { kernels::sgemm(args, a.data(), b.data(), c.data()); });
  const double t_blas = median_seconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  });

  const double flops = 2.0 * SIZE * SIZE * SIZE;
  const double gf_kernel = flops / t_kernel / 1e9;
  const double gf_blas = flops / t_blas / 1e9;
  const double ratio = gf_kernel / gf_blas;
  std::printf(
      "{\"bench\":\"kernel_sgemm\",\"m\":%u,\"n\":%u,\"k\":%u,\"runs\":%d,"
      "\"kernel_median_s\":%.6f,\"cblas_median_s\":%.6f,"
      "\"kernel_gflops\":%.2f,\"cblas_gflops\":%.2f,\"ratio\":%.4f}\n",
      SIZE, SIZE, SIZE, RUNS, t_kernel, t_blas, gf_kernel, gf_blas, ratio);
  std::printf("\nsgemm %ux%ux%u, median of %d runs\n", SIZE, SIZE, SIZE, RUNS);
  std::printf("  %-22s %10s %10s\n", "path", "time (ms)", "GFLOP/s");
  std::printf("  %-22s %10.3f %10.2f\n", "kernels::sgemm", t_kernel * 1e3, gf_kernel);
  std::printf("  %-22s %10.3f %10.2f\n", "cblas_sgemm (direct)", t_blas * 1e3, gf_blas);
  std::printf("  kernel / direct = %.4f\n", ratio);
  return 0;
}
