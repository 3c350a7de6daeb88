// SPDX-License-Identifier: GPL-2.0-or-later
// The workloads the registry lists (registry.cc), one file per family:
// gemm.cc, conv.cc, bandwidth.cc, micro.cc, mix.cc, launch.cc, setup.cc.
// A family whose cases differ only in sizes or path gives the registry a
// row maker: its parameters in, the row out.
#pragma once

#include <string_view>

#include "testbed/workloads/workload.h"

namespace vgpu::testbed::workloads {

// gemm.cc: sgemm, C = A(m x k) * B(k x n): the DeepBench gemm cases, the
// remoting paper's matmul and MMUL.
struct GemmShape {
  uint32_t m, n, k;
};
// "sgemm MxNxK (DeepBench)".
WorkloadSpec deepbench_gemm(std::string_view name, GemmShape shape, uint32_t runs);
Result<WorkloadResult> matmul320(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> mmul(Vm& vm, const WorkloadOptions& o);

// conv.cc: the DeepBench conv cases. Seed-workloads.json's layout: input
// W x H x C, batch N, filter R (height) x S (width), K filters.
struct ConvShape {
  uint32_t w, h, c, n, r, s, k, pad_h, pad_w, stride_h, stride_w;
};
// "conv2d W.. H.. C.. N.. R.. S.. K.. (DeepBench)".
WorkloadSpec deepbench_conv(std::string_view name, ConvShape shape, uint32_t runs);

// bandwidth.cc: host <-> VRAM through a BAR1 mapping, the copy engine
// through staging, or the copy engine from/to pinned memory; the row
// forces its path (WorkloadSpec::direct_transfer_max).
enum class Dir { h2d, d2h };
enum class Path { bar1, copy_engine, pinned };
WorkloadSpec bandwidth(std::string_view name, Dir dir, Path path, uint32_t runs, std::string_view what);

// micro.cc: GPUvm's microbenchmarks (MMUL is in gemm.cc).
Result<WorkloadResult> loop(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> launch(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> madd(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> cpy(Vm& vm, const WorkloadOptions& o);

// mix.cc: sgemm and MRI-Q from two contexts at once.
Result<WorkloadResult> sgemm_mriq(Vm& vm, const WorkloadOptions& o);

// setup.cc: the bring-up costs GPUvm found dominant (device open, context
// create+destroy, map/unmap churn).
Result<WorkloadResult> device_open(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> context_churn(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> map_churn(Vm& vm, const WorkloadOptions& o);

}  // namespace vgpu::testbed::workloads
