// SPDX-License-Identifier: GPL-2.0-or-later
// The suite's table: name, function (or a family's row maker and its
// sizes or path), default timed runs, what it is, and the transfer
// threshold it needs (bandwidth workloads force a path).
#include <algorithm>

#include "testbed/workloads/suite.h"

namespace vgpu::testbed::workloads {
namespace {

std::vector<WorkloadSpec> make_suite() {
  return {
      // The DeepBench cases' sizes are seed-workloads.json's. gemm: M, N, K.
      deepbench_gemm("gemm1", {5124, 700, 2048}, 3),
      deepbench_gemm("gemm2", {35, 700, 2048}, 5),
      deepbench_gemm("gemm3", {3072, 3000, 1024}, 3),
      deepbench_gemm("gemm4", {512, 6000, 2816}, 3),
      // conv: W, H, C, N, R, S, K, pad_h, pad_w, stride_h, stride_w.
      deepbench_conv("conv1", {341, 79, 32, 4, 5, 10, 32, 0, 0, 2, 2}, 3),
      deepbench_conv("conv2", {224, 224, 3, 1, 7, 7, 64, 3, 3, 2, 2}, 5),
      deepbench_conv("conv3", {56, 56, 256, 1, 1, 1, 128, 0, 0, 2, 2}, 5),
      deepbench_conv("conv4", {7, 7, 512, 2, 1, 1, 2048, 0, 0, 1, 1}, 5),
      bandwidth("bw-h2d-bar1", Dir::h2d, Path::bar1, 3, "64 MiB host->VRAM through a BAR1 mapping"),
      bandwidth("bw-d2h-bar1", Dir::d2h, Path::bar1, 3, "64 MiB VRAM->host through a BAR1 mapping"),
      bandwidth("bw-h2d-ce", Dir::h2d, Path::copy_engine, 3, "64 MiB host->VRAM through staging and the copy engine"),
      bandwidth("bw-d2h-ce", Dir::d2h, Path::copy_engine, 3, "64 MiB VRAM->host through staging and the copy engine"),
      bandwidth("bw-h2d-pinned", Dir::h2d, Path::pinned, 10, "64 MiB pinned host->VRAM on the copy engine (DMA)"),
      bandwidth("bw-d2h-pinned", Dir::d2h, Path::pinned, 10, "64 MiB VRAM->pinned host on the copy engine (DMA)"),
      {"matmul320", matmul320, 1000, "sgemm 320x640x320, 1000 runs (remoting paper)"},
      {"sgemm+mriq", sgemm_mriq, 3, "sgemm 1024^3 and MRI-Q from two channels at once"},
      {"LOOP", loop, 3, "100 spin kernels of 1 ms back to back"},
      {"launch", launch, 3, "10,000 fills of one element, each launched and waited (p50/p99)"},
      {"MADD", madd, 5, "matrix add 2048x2048"},
      {"MMUL", mmul, 5, "sgemm 512^3"},
      {"CPY", cpy, 5, "64 MiB buffer-to-buffer on the copy engine"},
      {"open", device_open, 5, "device open (bring-up: BAR tables, PFIFO), closed between runs"},
      {"ctx", context_churn, 5, "20 context create+destroy (address space, channel) per run"},
      {"churn", map_churn, 5, "64 buffers of 4 KiB..1 MiB mapped, 4 filled, unmapped per run"},
  };
}

}  // namespace

std::span<const WorkloadSpec> registry() {
  static const std::vector<WorkloadSpec> suite = make_suite();
  return suite;
}

const WorkloadSpec* find(std::string_view name) {
  for (const auto& w : registry())
    if (w.name == name) return &w;
  return nullptr;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

}  // namespace vgpu::testbed::workloads
