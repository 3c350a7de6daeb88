// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench: the workload suite and VM scaling on the in-process testbed
// (docs/benchmarks.md).
//   vgpu-bench workloads [...]   modes side by side, one VM each
//   vgpu-bench scale [...]       N VMs at once per mode
//   vgpu-bench fair [...]        the scheduler in real time through the whole stack
//   vgpu-bench model [...]       the GPU model beside the host (sgemm, copy)
//   vgpu-bench noisy [...]       what a misbehaving VM costs another
//   vgpu-bench idle [...]        the CPU time of VMs blocked in a fence wait
//   vgpu-bench ptx [...]         user kernels (PTX) per mode beside the built-in kernels
//   vgpu-bench sliver [...]      SliVER's co-run of SGEMM and MRI-Q against kernel slice sizes
//   vgpu-bench hostwork [...]    another VM's wait while one VM's shadow sync runs (a table flood)
#include <iostream>
#include <span>
#include <string>

#include "bench/workloads/commands.h"

int main(int argc, char** argv) {
  const std::span<char*> all(argv, static_cast<size_t>(argc));
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "--version") {
    std::cout << "vgpu-bench (vgpu) " VGPU_VERSION "\n";
    return 0;
  }
  if (cmd == "workloads") return vgpu::bench::workloads_main(all.subspan(2));
  if (cmd == "scale") return vgpu::bench::scale_main(all.subspan(2));
  if (cmd == "fair") return vgpu::bench::fair_main(all.subspan(2));
  if (cmd == "model") return vgpu::bench::model_main(all.subspan(2));
  if (cmd == "noisy") return vgpu::bench::noisy_main(all.subspan(2));
  if (cmd == "idle") return vgpu::bench::idle_main(all.subspan(2));
  if (cmd == "ptx") return vgpu::bench::ptx_main(all.subspan(2));
  if (cmd == "sliver") return vgpu::bench::sliver_main(all.subspan(2));
  if (cmd == "hostwork") return vgpu::bench::hostwork_main(all.subspan(2));
  std::cerr << (cmd.empty() || cmd == "--help" || cmd == "-h" ? "" : "vgpu-bench: unknown subcommand '" + cmd + "'\n")
            << "usage: vgpu-bench workloads [--modes LIST] [--runs N] [--only NAMES] [--json FILE]\n"
               "       vgpu-bench scale [--vms LIST] [--modes LIST] [--workloads NAMES] [--runs N] [--json FILE]\n"
               "       vgpu-bench fair [--policies LIST] [--short-ms N] [--long-ms LIST] [--weights W0:W1]\n"
               "                       [--slice-blocks LIST] [--seconds N] [--json FILE]\n"
               "       vgpu-bench model [--runs N] [--copy-mib N] [--json FILE]\n"
               "       vgpu-bench noisy [--storms LIST] [--seconds N] [--runs N] [--json FILE]\n"
               "       vgpu-bench idle [--vms N] [--modes LIST] [--spin-ms N] [--json FILE]\n"
               "       vgpu-bench ptx [--modes LIST] [--runs N] [--json FILE]\n"
               "       vgpu-bench sliver [--sgemm-n N] [--mriq-k N] [--mriq-x N] [--iterations N] [--slices LIST]\n"
               "       vgpu-bench hostwork [--runs N] [--turn-ms LIST] [--modes fv-opt,fv-naive] [--json FILE]\n"
               "                         [--latency-seconds N] [--policy NAME] [--turn-ms N] [--json FILE]\n"
               "       vgpu-bench --version\n"
               "Flags take their value as --flag VALUE or --flag=VALUE; a usage error exits 2.\n";
  return cmd == "--help" || cmd == "-h" ? 0 : 2;
}
