// SPDX-License-Identifier: GPL-2.0-or-later
// Trapped-access cost: the same register read, BOOT_0, through the native
// port (straight to the model) and through the mediator (a VM's port); the
// difference per read is what trapping adds. Best of three passes per
// mode, after the driver is up, so the machine's noise counts least.
#include <algorithm>
#include <chrono>

#include "bench/workloads/commands.h"
#include "testbed/testbed.h"
#include "vgpu/regs.h"

namespace vgpu::bench {
namespace {

double ns_per_read(testbed::Mode mode, uint32_t reads) {
  testbed::TestbedConfig tc;
  tc.mode = mode;
  tc.vram_per_vm = 64 * MiB;
  auto tb = testbed::Testbed::create(tc);
  if (!tb) return -1;
  double best = -1;
  auto st = (*tb)->run([&](testbed::Vm& vm) -> Status {
    for (int pass = 0; pass < 3; ++pass) {
      uint32_t sink = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (uint32_t i = 0; i < reads; ++i) sink |= vm.port.read32(driver::Bar::bar0, regs::pmc::BOOT_0.offset);
      const auto t1 = std::chrono::steady_clock::now();
      if (sink == 0xffffffffu) return fail(Errc::device_error, "BOOT_0 reads all ones");
      const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / reads;
      best = best < 0 ? ns : std::min(best, ns);
    }
    return {};
  });
  return st[0] ? best : -1;
}

}  // namespace

TrapCost measure_trap_cost(uint32_t reads) {
  TrapCost c;
  c.reads = reads;
  c.native_ns_per_read = ns_per_read(testbed::Mode::native, reads);
  c.fv_ns_per_read = ns_per_read(testbed::Mode::fv_opt, reads);
  c.cost_ns = c.fv_ns_per_read - c.native_ns_per_read;
  return c;
}

}  // namespace vgpu::bench
