// SPDX-License-Identifier: GPL-2.0-or-later
// The workload functions the registry lists (registry.cc), one file per
// family: gemm.cc, conv.cc, bandwidth.cc, micro.cc, mix.cc.
#pragma once

#include "testbed/workloads/workload.h"

namespace vgpu::testbed::workloads {

// gemm.cc: DeepBench gemm cases, the remoting paper's matmul and MMUL.
Result<WorkloadResult> gemm1(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> gemm2(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> gemm3(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> gemm4(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> matmul320(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> mmul(Vm& vm, const WorkloadOptions& o);

// conv.cc: DeepBench conv cases.
Result<WorkloadResult> conv1(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> conv2(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> conv3(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> conv4(Vm& vm, const WorkloadOptions& o);

// bandwidth.cc: host <-> VRAM through a BAR1 mapping and the copy engine.
Result<WorkloadResult> bw_h2d_bar1(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> bw_d2h_bar1(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> bw_h2d_ce(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> bw_d2h_ce(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> bw_h2d_pinned(Vm& vm, const WorkloadOptions& o);
Result<WorkloadResult> bw_d2h_pinned(Vm& vm, const WorkloadOptions& o);

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
