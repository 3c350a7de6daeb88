// SPDX-License-Identifier: GPL-2.0-or-later
// sgemm and MRI-Q issued together from two contexts (two channels), as in
// the kernel-slicing study's co-scheduled Parboil pair. Timed: from the
// sgemm launch (the MRI-Q launch follows at once on the other channel) to
// the later of the two fences. Checked: a sample of C and of Qr/Qi
// against double-precision references.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/text.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {
namespace {

// MRI-Q in float with a polynomial sin/cos against double: the phase is
// exact to a few float ulps per term; num_k terms accumulate in float.
constexpr double MRIQ_REL_TOL = 1e-4;
constexpr double SGEMM_REL_TOL = 1e-4;
constexpr double ABS_TOL = 1e-5;

struct MriqInputs {
  std::vector<float> kx, ky, kz, phi, x, y, z;
};

// The MRI-Q inputs in new buffers of `cm`, and its outputs.
Result<driver::MriqParams> upload_mriq(driver::Context& cm, const MriqInputs& in, uint32_t num_k, uint32_t num_x) {
  driver::MriqParams mp{};
  const std::vector<float>* srcs[] = {&in.kx, &in.ky, &in.kz, &in.phi, &in.x, &in.y, &in.z};
  driver::Buffer* dsts[] = {&mp.kx, &mp.ky, &mp.kz, &mp.phi_mag, &mp.x, &mp.y, &mp.z};
  for (size_t i = 0; i < std::size(srcs); ++i) {
    auto buf = upload_new(cm, *srcs[i]);
    if (!buf) return std::unexpected(buf.error().context("mriq input"));
    *dsts[i] = *buf;
  }
  auto qr = cm.alloc(size_t{num_x} * sizeof(float)), qi = cm.alloc(size_t{num_x} * sizeof(float));
  if (!qr || !qi) return fail(Errc::out_of_memory, "mriq outputs");
  mp.qr = *qr, mp.qi = *qi, mp.num_k = num_k, mp.num_x = num_x;
  return mp;
}

// Element i of Q's real (imag false) or imaginary part, in double.
Reference mriq_reference(const MriqInputs& in, uint32_t num_k, size_t i, bool imag) {
  Reference ref{0, 0};
  for (size_t k = 0; k < num_k; ++k) {
    const double arg = 2.0 * std::numbers::pi *
                       (double{in.kx[k]} * in.x[i] + double{in.ky[k]} * in.y[i] + double{in.kz[k]} * in.z[i]);
    ref.value += double{in.phi[k]} * (imag ? std::sin(arg) : std::cos(arg));
    ref.abs_sum += std::abs(double{in.phi[k]});
  }
  return ref;
}

}  // namespace

Result<WorkloadResult> sgemm_mriq(Vm& vm, const WorkloadOptions& o) {
  const uint32_t dim = o.reduced ? 128 : 1024;
  const uint32_t num_k = o.reduced ? 256 : 2048, num_x = o.reduced ? 1024 : 32768;
  auto ctx1 = vm.device.create_context();
  if (!ctx1) return std::unexpected(ctx1.error());
  auto ctx2 = vm.device.create_context();
  if (!ctx2) return std::unexpected(ctx2.error());
  driver::Context& cg = **ctx1;
  driver::Context& cm = **ctx2;

  const size_t nn = size_t{dim} * dim;
  const auto a = random_floats(nn, o.seed), b = random_floats(nn, o.seed + 1);
  auto gemm = upload_two(cg, a, b, nn);
  if (!gemm) return std::unexpected(gemm.error());

  const MriqInputs in{random_floats(num_k, o.seed + 10, -0.5f, 0.5f), random_floats(num_k, o.seed + 11, -0.5f, 0.5f),
                      random_floats(num_k, o.seed + 12, -0.5f, 0.5f), random_floats(num_k, o.seed + 13, 0.f, 1.f),
                      random_floats(num_x, o.seed + 14, -1.f, 1.f),   random_floats(num_x, o.seed + 15, -1.f, 1.f),
                      random_floats(num_x, o.seed + 16, -1.f, 1.f)};
  auto mriq = upload_mriq(cm, in, num_k, num_x);
  if (!mriq) return std::unexpected(mriq.error());
  const driver::MriqParams& mp = *mriq;

  WorkloadResult r;
  const Status timed = timed_runs(o, r, [&](uint32_t) -> Result<uint32_t> {
    auto fg = cg.sgemm({gemm->a, gemm->b, gemm->out, dim, dim, dim, 1.f, 0.f});
    if (!fg) return std::unexpected(fg.error());
    auto fm = cm.mriq(mp);
    if (!fm) return std::unexpected(fm.error());
    if (auto st = cg.wait(*fg); !st) return std::unexpected(st.error());
    if (auto st = cm.wait(*fm); !st) return std::unexpected(st.error());
    return 2u;
  });
  if (!timed) return std::unexpected(timed.error());

  std::vector<float> c(nn), out_r(num_x), out_i(num_x);
  if (auto st = cg.download(gemm->out, std::span<float>(c)); !st) return std::unexpected(st.error());
  if (auto st = cm.download(mp.qr, std::span<float>(out_r)); !st) return std::unexpected(st.error());
  if (auto st = cm.download(mp.qi, std::span<float>(out_i)); !st) return std::unexpected(st.error());

  const auto gidx = sample_indices(nn, o.check_samples, o.seed + 2);
  const auto gcheck = check_sampled(
      c, gidx, [&](size_t i) { return sgemm_reference(a, b, dim, dim, i); }, SGEMM_REL_TOL, ABS_TOL);
  const auto mriq_ref = [&](size_t i, bool imag) { return mriq_reference(in, num_k, i, imag); };
  const auto xidx = sample_indices(num_x, o.check_samples / 2, o.seed + 3);
  const auto rcheck = check_sampled(
      out_r, xidx, [&](size_t i) { return mriq_ref(i, false); }, MRIQ_REL_TOL, ABS_TOL);
  const auto icheck = check_sampled(
      out_i, xidx, [&](size_t i) { return mriq_ref(i, true); }, MRIQ_REL_TOL, ABS_TOL);

  r.correct = gcheck.ok() && rcheck.ok() && icheck.ok();
  r.checksum = hash_of(std::span<const float>(c)) ^ (hash_of(std::span<const float>(out_r)) * 3) ^
               (hash_of(std::span<const float>(out_i)) * 5);
  r.work_per_run = 1;
  r.work_unit = "pair";
  r.detail = strfmt("sgemm %u^3 + mriq K%u X%u, median %.1f ms; sgemm: %s; Qr: %s; Qi: %s", dim, num_k, num_x,
                    median(r.seconds) * 1e3, gcheck.summary().c_str(), rcheck.summary().c_str(),
                    icheck.summary().c_str());
  return r;
}

}  // namespace vgpu::testbed::workloads
