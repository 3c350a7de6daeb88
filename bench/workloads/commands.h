// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench's subcommands; each takes its own arguments (argv after the
// subcommand) and returns the process exit code.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace vgpu::bench {

int workloads_main(std::span<char*> args);
int scale_main(std::span<char*> args);
int fair_main(std::span<char*> args);
int model_main(std::span<char*> args);
int noisy_main(std::span<char*> args);
int idle_main(std::span<char*> args);
int sliver_main(std::span<char*> args);

// The mediator's cost per trapped access: N reads of BOOT_0 through the
// mediated port (fv-opt) minus N through the native port, over N.
struct TrapCost {
  double native_ns_per_read = 0;
  double fv_ns_per_read = 0;
  double cost_ns = 0;
  uint32_t reads = 0;
};
TrapCost measure_trap_cost(uint32_t reads);

}  // namespace vgpu::bench
