// SPDX-License-Identifier: GPL-2.0-or-later
// sgemm workloads: C = A(m x k) * B(k x n), inputs uniform in [-1, 1).
// Timed: each run from the sgemm launch to its fence (with
// WorkloadOptions::inputs other than resident, from the inputs' upload to
// the output's download: kernel_io.h). Checked: a
// deterministic sample of C against a double-precision dot product.
#include <algorithm>
#include <cmath>

#include "common/text.h"
#include "testbed/workloads/kernel_io.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {
namespace {

// Sanitizer tests: every dimension a quarter, at least 8.
uint32_t reduce(uint32_t d) { return std::max(8u, d / 4); }

// Relative tolerance against the sum of |a_ik b_kj|: float accumulation of
// up to a few thousand terms stays far below this; a wrong element is off
// by the order of its value (about sqrt(k) / 3 times larger).
constexpr double GEMM_REL_TOL = 1e-4;
constexpr double GEMM_ABS_TOL = 1e-5;

Result<WorkloadResult> run_sgemm(Vm& vm, const WorkloadOptions& o, GemmShape s) {
  if (o.reduced) s = {reduce(s.m), reduce(s.n), reduce(s.k)};
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  const auto a = random_floats(size_t{s.m} * s.k, o.seed);
  const auto b = random_floats(size_t{s.k} * s.n, o.seed + 1);
  auto io = KernelIo::create(c, vm.device.options(), o.inputs, {a, b}, size_t{s.m} * s.n);
  if (!io) return std::unexpected(io.error().context("sgemm A, B, C"));

  const driver::SgemmParams params{io->input(0), io->input(1), io->output(), s.m, s.n, s.k, 1.f, 0.f};
  if (auto st = untimed_launch(c, c.sgemm(params)); !st) return std::unexpected(st.error());

  WorkloadResult r;
  if (Status st = timed_kernel_runs(c, *io, o, r, [&] { return c.sgemm(params); }); !st)
    return std::unexpected(st.error());

  auto got = io->result();
  if (!got) return std::unexpected(got.error());
  const std::vector<float>& out = *got;
  const auto idx = sample_indices(out.size(), o.check_samples, o.seed + 2);
  const auto check = check_sampled(
      out, idx, [&](size_t i) { return sgemm_reference(a, b, s.k, s.n, i); }, GEMM_REL_TOL, GEMM_ABS_TOL);
  r.correct = check.ok();
  r.checksum = hash_of(std::span<const float>(out));
  r.work_per_run = 2.0 * s.m * s.n * s.k;
  r.work_unit = "flop";
  const double med = median(r.seconds);
  r.inputs = input_path_name(o.inputs);
  r.detail = strfmt("%ux%ux%u, %.2f GFLOP/s; %s; %s", s.m, s.n, s.k, med > 0 ? r.work_per_run / med * 1e-9 : 0.0,
                    io->describe().c_str(), check.summary().c_str());
  return r;
}

}  // namespace

WorkloadSpec deepbench_gemm(std::string_view name, GemmShape shape, uint32_t runs) {
  return {name, [shape](Vm& vm, const WorkloadOptions& o) { return run_sgemm(vm, o, shape); }, runs,
          strfmt("sgemm %ux%ux%u (DeepBench)", shape.m, shape.n, shape.k)};
}

// The remoting paper's float32 matmul: A 320x320 times B 320x640, 1000 runs
// by default; the mean per run goes into the detail too.
Result<WorkloadResult> matmul320(Vm& vm, const WorkloadOptions& o) {
  auto r = run_sgemm(vm, o, {320, 640, 320});
  if (r && !r->seconds.empty()) {
    double sum = 0;
    for (double t : r->seconds) sum += t;
    r->detail = strfmt("mean %.1f us/run; ", sum / static_cast<double>(r->seconds.size()) * 1e6) + r->detail;
  }
  return r;
}

// GPUvm's MMUL microbenchmark: sgemm 512^3.
Result<WorkloadResult> mmul(Vm& vm, const WorkloadOptions& o) { return run_sgemm(vm, o, {512, 512, 512}); }

}  // namespace vgpu::testbed::workloads
