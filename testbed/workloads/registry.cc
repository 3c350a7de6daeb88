// SPDX-License-Identifier: GPL-2.0-or-later
// The suite's table: name, function, default timed runs, what it is, and
// the transfer threshold it needs (bandwidth workloads force a path).
#include <algorithm>
#include <array>

#include "testbed/workloads/suite.h"

namespace vgpu::testbed::workloads {
namespace {

constexpr int64_t ALWAYS_DIRECT = int64_t{256} * 1024 * 1024;  // BAR1's size: every transfer direct
constexpr int64_t NEVER_DIRECT = 0;                            // every transfer through the copy engine

constexpr std::array SUITE{
    WorkloadSpec{"gemm1", gemm1, 3, "sgemm 5124x700x2048 (DeepBench)"},
    WorkloadSpec{"gemm2", gemm2, 5, "sgemm 35x700x2048 (DeepBench)"},
    WorkloadSpec{"gemm3", gemm3, 3, "sgemm 3072x3000x1024 (DeepBench)"},
    WorkloadSpec{"gemm4", gemm4, 3, "sgemm 512x6000x2816 (DeepBench)"},
    WorkloadSpec{"conv1", conv1, 3, "conv2d W341 H79 C32 N4 R5 S10 K32 stride 2 (DeepBench)"},
    WorkloadSpec{"conv2", conv2, 5, "conv2d W224 H224 C3 N1 R7 S7 K64 pad 3 stride 2 (DeepBench)"},
    WorkloadSpec{"conv3", conv3, 5, "conv2d W56 H56 C256 N1 1x1 K128 stride 2 (DeepBench)"},
    WorkloadSpec{"conv4", conv4, 5, "conv2d W7 H7 C512 N2 1x1 K2048 (DeepBench)"},
    WorkloadSpec{"bw-h2d-bar1", bw_h2d_bar1, 3, "64 MiB host->VRAM through a BAR1 mapping", ALWAYS_DIRECT},
    WorkloadSpec{"bw-d2h-bar1", bw_d2h_bar1, 3, "64 MiB VRAM->host through a BAR1 mapping", ALWAYS_DIRECT},
    WorkloadSpec{"bw-h2d-ce", bw_h2d_ce, 3, "64 MiB host->VRAM through staging and the copy engine", NEVER_DIRECT},
    WorkloadSpec{"bw-d2h-ce", bw_d2h_ce, 3, "64 MiB VRAM->host through staging and the copy engine", NEVER_DIRECT},
    WorkloadSpec{"bw-h2d-pinned", bw_h2d_pinned, 10, "64 MiB pinned host->VRAM on the copy engine (DMA)", NEVER_DIRECT},
    WorkloadSpec{"bw-d2h-pinned", bw_d2h_pinned, 10, "64 MiB VRAM->pinned host on the copy engine (DMA)", NEVER_DIRECT},
    WorkloadSpec{"matmul320", matmul320, 1000, "sgemm 320x640x320, 1000 runs (remoting paper)"},
    WorkloadSpec{"sgemm+mriq", sgemm_mriq, 3, "sgemm 1024^3 and MRI-Q from two channels at once"},
    WorkloadSpec{"LOOP", loop, 3, "100 spin kernels of 1 ms back to back"},
    WorkloadSpec{"launch", launch, 3, "10,000 fills of one element, each launched and waited (p50/p99)"},
    WorkloadSpec{"MADD", madd, 5, "matrix add 2048x2048"},
    WorkloadSpec{"MMUL", mmul, 5, "sgemm 512^3"},
    WorkloadSpec{"CPY", cpy, 5, "64 MiB buffer-to-buffer on the copy engine"},
    WorkloadSpec{"open", device_open, 5, "device open (bring-up: BAR tables, PFIFO), closed between runs"},
    WorkloadSpec{"ctx", context_churn, 5, "20 context create+destroy (address space, channel) per run"},
    WorkloadSpec{"churn", map_churn, 5, "64 buffers of 4 KiB..1 MiB mapped, 4 filled, unmapped per run"},
};

}  // namespace

std::span<const WorkloadSpec> registry() { return SUITE; }

const WorkloadSpec* find(std::string_view name) {
  for (const auto& w : SUITE)
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
