// SPDX-License-Identifier: GPL-2.0-or-later
// conv2d workloads (DeepBench conv_bench inference cases): input NCHW and
// filter KCRS uniform in [-1, 1), output NKPQ. Timed: each run from the
// conv2d launch to its fence (with WorkloadOptions::inputs other than
// resident, from the inputs' upload to the output's download). Checked: a deterministic sample of outputs
// against a double-precision sum over (c, r, s) with zero padding.
#include <algorithm>
#include <cmath>

#include "common/text.h"
#include "gpu/kernels/kernels.h"
#include "testbed/workloads/kernel_io.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {
namespace {

// "conv2d W224 H224 C3 N1 R7 S7 K64 pad 3 stride 2": a 1x1 filter as such,
// padding and stride only where they are not 0 and 1 (the same both ways).
std::string describe(const ConvShape& s) {
  std::string d = strfmt("conv2d W%u H%u C%u N%u", s.w, s.h, s.c, s.n);
  d += s.r == 1 && s.s == 1 ? std::string(" 1x1") : strfmt(" R%u S%u", s.r, s.s);
  d += strfmt(" K%u", s.k);
  if (s.pad_h != 0 || s.pad_w != 0)
    d += s.pad_h == s.pad_w ? strfmt(" pad %u", s.pad_h) : strfmt(" pad %ux%u", s.pad_h, s.pad_w);
  if (s.stride_h != 1 || s.stride_w != 1)
    d += s.stride_h == s.stride_w ? strfmt(" stride %u", s.stride_h) : strfmt(" stride %ux%u", s.stride_h, s.stride_w);
  return d;
}

constexpr double CONV_REL_TOL = 1e-4;
constexpr double CONV_ABS_TOL = 1e-5;

Result<WorkloadResult> run_conv(Vm& vm, const WorkloadOptions& o, ConvShape s) {
  if (o.reduced) {  // one image, a quarter of the channels and filters
    s.n = 1;
    s.c = std::max(1u, s.c / 4);
    s.k = std::max(1u, s.k / 4);
  }
  driver::Conv2dParams p{};
  p.n = s.n, p.c = s.c, p.h = s.h, p.w = s.w, p.k = s.k, p.r = s.r, p.s = s.s;
  p.pad_h = s.pad_h, p.pad_w = s.pad_w, p.stride_h = s.stride_h, p.stride_w = s.stride_w;
  const cls::Conv2dArgs args{0, 0, 0, p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.pad_h, p.pad_w, p.stride_h, p.stride_w, 0};
  const uint32_t out_h = gpu::kernels::conv2d_out_h(args), out_w = gpu::kernels::conv2d_out_w(args);
  if (out_h == 0 || out_w == 0) return fail(Errc::invalid_argument, "conv: invalid shape");

  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  const auto in = random_floats(size_t{s.n} * s.c * s.h * s.w, o.seed);
  const auto filt = random_floats(size_t{s.k} * s.c * s.r * s.s, o.seed + 1);
  const size_t out_count = size_t{s.n} * s.k * out_h * out_w;
  auto io = KernelIo::create(c, vm.device.options(), o.inputs, {in, filt}, out_count);
  if (!io) return std::unexpected(io.error().context("conv input, filter, output"));
  p.input = io->input(0), p.filter = io->input(1), p.output = io->output();
  if (auto st = untimed_launch(c, c.conv2d(p)); !st) return std::unexpected(st.error());

  WorkloadResult r;
  if (Status st = timed_kernel_runs(c, *io, o, r, [&] { return c.conv2d(p); }); !st) return std::unexpected(st.error());

  auto got = io->result();
  if (!got) return std::unexpected(got.error());
  const std::vector<float>& out = *got;
  const auto idx = sample_indices(out.size(), o.check_samples, o.seed + 2);
  const auto check = check_sampled(
      out, idx,
      [&](size_t i) {
        const size_t q = i % out_w, pq = i / out_w, pp = pq % out_h, nk = pq / out_h;
        const size_t kk = nk % s.k, nn = nk / s.k;
        Reference ref{0, 0};
        for (size_t cc = 0; cc < s.c; ++cc)
          for (size_t rr = 0; rr < s.r; ++rr) {
            const int64_t ih = static_cast<int64_t>(pp * s.stride_h + rr) - s.pad_h;
            if (ih < 0 || ih >= s.h) continue;
            for (size_t ss = 0; ss < s.s; ++ss) {
              const int64_t iw = static_cast<int64_t>(q * s.stride_w + ss) - s.pad_w;
              if (iw < 0 || iw >= s.w) continue;
              const double t =
                  double{in[((nn * s.c + cc) * s.h + static_cast<size_t>(ih)) * s.w + static_cast<size_t>(iw)]} *
                  double{filt[((kk * s.c + cc) * s.r + rr) * s.s + ss]};
              ref.value += t;
              ref.abs_sum += std::abs(t);
            }
          }
        return ref;
      },
      CONV_REL_TOL, CONV_ABS_TOL);
  r.correct = check.ok();
  r.checksum = hash_of(std::span<const float>(out));
  r.work_per_run = 2.0 * static_cast<double>(out_count) * s.c * s.r * s.s;
  r.work_unit = "flop";
  const double med = median(r.seconds);
  r.inputs = input_path_name(o.inputs);
  r.detail = strfmt("N%u C%u H%u W%u K%u R%u S%u -> %ux%u, %.2f GFLOP/s; %s; %s", s.n, s.c, s.h, s.w, s.k, s.r, s.s,
                    out_h, out_w, med > 0 ? r.work_per_run / med * 1e-9 : 0.0, io->describe().c_str(),
                    check.summary().c_str());
  return r;
}

}  // namespace

WorkloadSpec deepbench_conv(std::string_view name, ConvShape shape, uint32_t runs) {
  return {name, [shape](Vm& vm, const WorkloadOptions& o) { return run_conv(vm, o, shape); }, runs,
          describe(shape) + " (DeepBench)"};
}

}  // namespace vgpu::testbed::workloads
