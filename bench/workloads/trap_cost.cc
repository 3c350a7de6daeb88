// SPDX-License-Identifier: GPL-2.0-or-later
// Trapped-access cost: the same register read, BOOT_0, through the native
// port (straight to the model) and through the mediator (a VM's port); the
// difference per read is what trapping adds. Best of three passes per
// mode, after the driver is up, so the machine's noise counts least; no
// figure when the two modes' passes overlap.
#include <algorithm>
#include <chrono>

#include "bench/workloads/commands.h"
#include "testbed/testbed.h"
#include "vgpu/regs.h"

namespace vgpu::bench {
namespace {

constexpr uint32_t PASSES = 3;

struct PerRead {
  double best = -1, worst = -1;  // ns; -1: the mode did not run
};

PerRead ns_per_read(testbed::Mode mode, uint32_t reads) {
  testbed::TestbedConfig tc;
  tc.mode = mode;
  tc.vram_per_vm = 64 * MiB;
  auto tb = testbed::Testbed::create(tc);
  if (!tb) return {};
  double best = -1, worst = -1;
  auto st = (*tb)->run([&](testbed::Vm& vm) -> Status {
    for (uint32_t pass = 0; pass < PASSES; ++pass) {
      uint32_t sink = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (uint32_t i = 0; i < reads; ++i) sink |= vm.port.read32(driver::Bar::bar0, regs::pmc::BOOT_0.offset);
      const auto t1 = std::chrono::steady_clock::now();
      if (sink == 0xffffffffu) return fail(Errc::device_error, "BOOT_0 reads all ones");
      const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / reads;
      best = best < 0 ? ns : std::min(best, ns);
      worst = std::max(worst, ns);
    }
    return {};
  });
  if (!st[0]) return {};
  return PerRead{best, worst};
}

}  // namespace

TrapCost measure_trap_cost(uint32_t reads) {
  TrapCost c;
  c.reads = reads;
  c.passes = PASSES;
  const PerRead native = ns_per_read(testbed::Mode::native, reads);
  const PerRead fv = ns_per_read(testbed::Mode::fv_opt, reads);
  c.native_ns_per_read = native.best;
  c.native_worst_ns = native.worst;
  c.fv_ns_per_read = fv.best;
  c.fv_worst_ns = fv.worst;
  // A noisy host makes the difference of two tiny figures meaningless (it
  // printed -35 ns once): only a gap beyond both spreads is a cost.
  if (native.best >= 0 && fv.best > native.worst) c.cost_ns = fv.best - native.best;
  return c;
}

}  // namespace vgpu::bench
