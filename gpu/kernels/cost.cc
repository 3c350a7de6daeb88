// SPDX-License-Identifier: GPL-2.0-or-later
// The modeled cost of each kernel in nanoseconds of virtual time: work over
// a modeled rate plus a fixed launch cost, saturating instead of
// overflowing (sizes come from the guest).
#include <cmath>
#include <cstdint>
#include <limits>

#include "gpu/kernels/checked.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr uint64_t NS_MAX = std::numeric_limits<uint64_t>::max();
// 2^64 as a double: the first value that no longer fits in uint64_t.
constexpr double NS_LIMIT = 18446744073709551616.0;

// MRI-Q work per (k, x) pair in flop-equivalents of the FMA rate
// (flops_per_ns counts an FMA as 2 flops, one issue slot of one core).
// Parboil's inner loop is 4 FP instructions for the phase argument
// (mul, fma, fma, mul by 2*pi), 2 FMAs for the accumulations, and one
// sin and one cos on the special function units. GF100 has 4 SFUs beside
// 32 cores per SM, so each SFU op takes 8 core issue slots:
// 4 + 2 + 2 * 8 = 22 issue slots = 44 flop-equivalents.
constexpr double MRIQ_FLOPS_PER_ELEMENT = 44.0;

uint64_t work_ns(double work, double rate) {
  if (!(work > 0.0)) return 0;
  if (!(rate > 0.0) || !std::isfinite(rate)) return NS_MAX;
  const double ns = std::ceil(work / rate);
  return ns >= NS_LIMIT ? NS_MAX : static_cast<uint64_t>(ns);
}

uint64_t launched(const CostModel& m, uint64_t ns) { return checked::add_sat(m.launch_ns, ns); }

}  // namespace

uint64_t sgemm_cost_ns(const CostModel& m, const cls::SgemmArgs& a) {
  const double flops = 2.0 * a.m * static_cast<double>(a.n) * static_cast<double>(a.k);
  return launched(m, work_ns(flops, m.flops_per_ns));
}

uint64_t conv2d_cost_ns(const CostModel& m, const cls::Conv2dArgs& a) {
  const double p = conv2d_out_h(a);
  const double q = conv2d_out_w(a);
  const double filter = static_cast<double>(a.c) * static_cast<double>(a.r) * a.s;
  const double flops = 2.0 * a.n * static_cast<double>(a.k) * p * q * filter;
  return launched(m, work_ns(flops, m.flops_per_ns));
}

uint64_t mriq_cost_ns(const CostModel& m, uint32_t num_k, uint32_t num_x) {
  const double flops = MRIQ_FLOPS_PER_ELEMENT * num_k * static_cast<double>(num_x);
  return launched(m, work_ns(flops, m.flops_per_ns));
}

uint64_t stream_cost_ns(const CostModel& m, uint64_t bytes) {
  return launched(m, work_ns(static_cast<double>(bytes), m.bytes_per_ns));
}

uint64_t spin_cost_ns(const CostModel&, uint64_t duration_ns) { return duration_ns; }

}  // namespace vgpu::gpu::kernels
