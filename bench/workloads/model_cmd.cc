// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench model: the software GPU model against the host doing the same
// thing directly. sgemm 1024x1024x1024 launched through the driver on the
// model (native mode: launch to fence) beside one cblas_sgemm call; a
// copy-engine buffer-to-buffer copy beside memcpy of the same bytes.
// Median of --runs each, interleaved model/host so drift hits both.
//   model [--runs 5] [--copy-mib 256] [--json FILE]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "gpu/kernels/tile_pool.h"
#include "testbed/testbed.h"

namespace vgpu::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t DIM = 1024;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  std::vector<double> model_sgemm, host_sgemm, model_copy, host_copy;
};

Status run(testbed::Vm& vm, uint32_t runs, uint64_t copy_bytes, Figures& f) {
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  const uint64_t mat = uint64_t{DIM} * DIM * sizeof(float);
  std::vector<float> a(DIM * DIM), b(DIM * DIM), out(DIM * DIM);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 17) * 0.25f;
    b[i] = static_cast<float>(i % 13) * 0.5f;
  }
  auto ba = c.alloc(mat), bb = c.alloc(mat), bc = c.alloc(mat);
  auto src = c.alloc(copy_bytes), dst = c.alloc(copy_bytes);
  if (!ba || !bb || !bc || !src || !dst) return fail(Errc::out_of_memory, "model bench: buffers");
  if (Status s = c.upload(*ba, std::span<const float>(a)); !s) return s;
  if (Status s = c.upload(*bb, std::span<const float>(b)); !s) return s;
  std::vector<std::byte> hsrc(copy_bytes, std::byte{0x5a}), hdst(copy_bytes);
  for (uint32_t r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    auto fence = c.sgemm({*ba, *bb, *bc, DIM, DIM, DIM, 1.f, 0.f});
    if (!fence) return std::unexpected(fence.error());
    if (Status s = c.wait(*fence); !s) return s;
    auto t1 = Clock::now();
    // OpenBLAS's own threads for the host's call (the device's tiles, done
    // by now, set it to one thread: gpu/kernels/tile_pool.h).
    gpu::kernels::with_all_blas_threads([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, DIM, DIM, DIM, 1.f, a.data(), DIM, b.data(), DIM, 0.f,
                  out.data(), DIM);
    });
    auto t2 = Clock::now();
    auto cf = c.copy(*dst, 0, *src, 0, copy_bytes);
    if (!cf) return std::unexpected(cf.error());
    if (Status s = c.wait(*cf); !s) return s;
    auto t3 = Clock::now();
    std::memcpy(hdst.data(), hsrc.data(), copy_bytes);
    auto t4 = Clock::now();
    f.model_sgemm.push_back(seconds(t0, t1));
    f.host_sgemm.push_back(seconds(t1, t2));
    f.model_copy.push_back(seconds(t2, t3));
    f.host_copy.push_back(seconds(t3, t4));
  }
  // The model's result must be the host's.
  std::vector<float> got(DIM * DIM);
  if (Status s = c.download(*bc, std::span<float>(got)); !s) return s;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != out[i]) return fail(Errc::device_error, "model sgemm differs from cblas at " + std::to_string(i));
  return {};
}

}  // namespace

int model_main(std::span<char*> args) {
  uint32_t runs = 5, copy_mib = 256;
  std::string json_path;
  if (Status s = parse_flags(args, {{"--runs", count_flag("--runs", runs, 100)},
                                    {"--copy-mib", count_flag("--copy-mib", copy_mib, 1024)},
                                    {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "model: " << s.error().message << "\n";
    return 2;
  }
  const uint64_t copy_bytes = uint64_t{copy_mib} * MiB;
  testbed::TestbedConfig tc;
  tc.vram_per_vm = 2 * copy_bytes + 64 * MiB;
  auto tb = testbed::Testbed::create(tc);
  if (!tb) {
    std::cerr << "model: " << tb.error().what() << "\n";
    return 1;
  }
  Figures f;
  auto st = (*tb)->run([&](testbed::Vm& vm) { return run(vm, runs, copy_bytes, f); });
  if (!st[0]) {
    std::cerr << "model: " << st[0].error().what() << "\n";
    return 1;
  }
  const double flop = 2.0 * DIM * DIM * DIM;
  const double ms = median(f.model_sgemm), hs = median(f.host_sgemm);
  const double mc = median(f.model_copy), hc = median(f.host_copy);
  const double gbytes = static_cast<double>(copy_bytes) / 1e9;
  std::printf("the software GPU model beside the host, median of %u interleaved runs\n", runs);
  std::printf("%-28s | %12s | %12s | %s\n", "operation", "model", "host", "model/host");
  std::printf("%-28s | %8.1f GF/s | %8.1f GF/s | %.3f\n", "sgemm 1024^3 (GFLOP/s)", flop / ms / 1e9, flop / hs / 1e9,
              hs / ms);
  std::printf("%-28s | %8.2f GB/s | %8.2f GB/s | %.3f\n", strfmt("copy %u MiB (GB/s)", copy_mib).c_str(), gbytes / mc,
              gbytes / hc, hc / mc);
  std::printf("model sgemm: launch to fence through the driver; host: one cblas_sgemm call. Results equal.\n");
  if (!json_path.empty()) {
    const nlohmann::ordered_json j = {
        {"suite", "model"},
        {"runs", runs},
        {"sgemm",
         {{"m", DIM},
          {"n", DIM},
          {"k", DIM},
          {"model_gflops", flop / ms / 1e9},
          {"host_gflops", flop / hs / 1e9},
          {"ratio", hs / ms}}},
        {"copy", {{"bytes", copy_bytes}, {"model_gbps", gbytes / mc}, {"host_gbps", gbytes / hc}, {"ratio", hc / mc}}}};
    if (!write_json_file("model", json_path, j)) return 1;
  }
  return 0;
}

}  // namespace vgpu::bench
