// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench's subcommands; each takes its own arguments (argv after the
// subcommand) and returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
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
int ptx_main(std::span<char*> args);
int hostwork_main(std::span<char*> args);

// The mediator's cost per trapped access: N reads of BOOT_0 through the
// mediated port (fv-opt) minus N through the native port, over N. Each
// mode's best and worst of its passes: the cost is a figure only when
// fv-opt's best is above native's worst (none: the spread hides it).
struct TrapCost {
  double native_ns_per_read = 0, native_worst_ns = 0;
  double fv_ns_per_read = 0, fv_worst_ns = 0;
  std::optional<double> cost_ns;
  uint32_t reads = 0;   // per pass
  uint32_t passes = 0;  // per mode
};
TrapCost measure_trap_cost(uint32_t reads);

}  // namespace vgpu::bench
