// SPDX-License-Identifier: GPL-2.0-or-later
// GPUvm's microbenchmarks: LOOP (back-to-back spin kernels), MADD (matrix
// add), CPY (copy-engine buffer-to-buffer copy). MMUL is in gemm.cc.
#include <cstring>

#include "common/text.h"
#include "testbed/workloads/suite.h"
#include "testbed/workloads/support.h"

namespace vgpu::testbed::workloads {

// LOOP: count spin kernels submitted back to back, then one wait. Timed:
// first launch to the last fence. Checked: every fence reached and the
// run took at least count x spin (spins wait on the GPU's clock).
Result<WorkloadResult> loop(Vm& vm, const WorkloadOptions& o) {
  const uint32_t count = o.reduced ? 20 : 100;
  const uint64_t spin_ns = o.spin_ns != 0 ? o.spin_ns : o.reduced ? 100'000 : 1'000'000;
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  WorkloadResult r;
  bool ok = true;
  std::vector<driver::Fence> fences;  // a run's
  const Status timed = timed_runs(
      o, r,
      [&](uint32_t) -> Result<uint32_t> {
        for (uint32_t j = 0; j < count; ++j) {
          auto f = c.spin({spin_ns});
          if (!f) return std::unexpected(f.error());
          fences.push_back(*f);
        }
        if (auto st = c.wait(fences.back()); !st) return std::unexpected(st.error());
        return count;
      },
      [&](uint32_t) -> Status {
        for (auto f : fences) ok = ok && c.done(f);
        ok = ok && r.seconds.back() * 1e9 >= static_cast<double>(count * spin_ns);
        fences.clear();
        return {};
      });
  if (!timed) return std::unexpected(timed.error());
  r.correct = ok;
  const uint64_t shape[2] = {count, spin_ns};
  r.checksum = hash_of(std::span<const uint64_t>(shape));
  r.work_per_run = count;
  r.work_unit = "kernel";
  r.detail = strfmt("%u spins of %.3f ms, median %.2f ms (%.1f%% over the spin total); %s", count,
                    static_cast<double>(spin_ns) * 1e-6, median(r.seconds) * 1e3,
                    (median(r.seconds) * 1e9 / static_cast<double>(count * spin_ns) - 1.0) * 100.0,
                    ok ? "all fences reached, no spin cut short" : "A FENCE OR SPIN WAS CUT SHORT");
  return r;
}

// MADD: C = A + B, rows x cols. Timed: launch to fence. Checked: every
// element equals the float sum computed on the CPU, bit for bit.
Result<WorkloadResult> madd(Vm& vm, const WorkloadOptions& o) {
  const uint32_t rows = o.reduced ? 256 : 2048, cols = rows;
  const size_t n = size_t{rows} * cols;
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  const auto a = random_floats(n, o.seed), b = random_floats(n, o.seed + 1);
  auto bufs = upload_two(c, a, b, n);
  if (!bufs) return std::unexpected(bufs.error());
  WorkloadResult r;
  const Status timed = timed_runs(o, r, [&](uint32_t) {
    return launched_and_waited(c, c.madd({bufs->a, bufs->b, bufs->out, rows, cols}));
  });
  if (!timed) return std::unexpected(timed.error());
  std::vector<float> out(n);
  if (auto st = c.download(bufs->out, std::span<float>(out)); !st) return std::unexpected(st.error());
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const float want = a[i] + b[i];
    bad += std::memcmp(&out[i], &want, sizeof(float)) != 0;
  }
  r.correct = bad == 0;
  r.checksum = hash_of(std::span<const float>(out));
  r.work_per_run = 3.0 * static_cast<double>(n * sizeof(float));
  r.work_unit = "byte";
  r.detail = strfmt("%ux%u, %.2f GB/s moved; %zu of %zu elements differ from the CPU sum", rows, cols,
                    r.work_per_run / median(r.seconds) * 1e-9, bad, n);
  return r;
}

// CPY: one buffer to another on the copy engine. Timed: launch to fence.
// Checked: the destination's bytes equal the source's.
Result<WorkloadResult> cpy(Vm& vm, const WorkloadOptions& o) {
  const uint64_t bytes = o.reduced ? 4 * MiB : 64 * MiB;
  auto ctx = vm.device.create_context();
  if (!ctx) return std::unexpected(ctx.error());
  driver::Context& c = **ctx;
  const auto src = random_floats(bytes / sizeof(float), o.seed);
  auto bs = upload_new(c, src);
  if (!bs) return std::unexpected(bs.error());
  auto bd = c.alloc(bytes);
  if (!bd) return std::unexpected(bd.error());
  WorkloadResult r;
  const Status timed = timed_runs(o, r,
                                  [&](uint32_t) { return launched_and_waited(c, c.copy(*bd, 0, *bs, 0, bytes)); });
  if (!timed) return std::unexpected(timed.error());
  std::vector<float> out(src.size());
  if (auto st = c.download(*bd, std::span<float>(out)); !st) return std::unexpected(st.error());
  const bool equal = std::memcmp(out.data(), src.data(), bytes) == 0;
  r.correct = equal;
  r.checksum = hash_of(std::span<const float>(out));
  r.work_per_run = static_cast<double>(bytes);
  r.work_unit = "byte";
  r.detail = strfmt("%.0f MiB, %.2f GB/s; %s", static_cast<double>(bytes) / static_cast<double>(MiB),
                    r.work_per_run / median(r.seconds) * 1e-9, equal ? "destination equals source" : "BYTES DIFFER");
  return r;
}

}  // namespace vgpu::testbed::workloads
