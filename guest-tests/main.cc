// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-guest-tests: the driver conformance tests and workloads inside the
// guest, on the vgpu PCI device through driver::PciPort.
//   vgpu-guest-tests [all|conformance|workloads|TEST]   (no test of its own matches: SKIP)
// Without an argument the selection comes from the environment variable
// vgpu_tests (the kernel passes `vgpu_tests=workloads` on its command line
// to /init's environment), else all.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "conformance.h"
#include "gpu_env.h"
#include "harness.h"

int main(int argc, char** argv) {
  using namespace vgpu::guest;
  const char* env = std::getenv("vgpu_tests");
  Selection selection;
  if (argc > 1) {
    selection.filter = argv[1];
  } else if (env != nullptr && *env != '\0') {
    selection.filter = env;
  }
  const char* program = "vgpu-guest-tests";
  if (auto port = gpu_port(); !port) {
    std::printf("FAIL %s: %s\n%s: 0 passed, 1 failed\n", program, port.error().what().c_str(), program);
    return 1;
  } else {
    std::printf("    device: %s\n", (*port)->name().c_str());
  }
  std::vector<TestCase> all;
  for (auto table : {conformance_tests(), workload_tests(), migration_tests()})
    all.insert(all.end(), table.begin(), table.end());
  return run_tests(program, all, selection) == 0 ? 0 : 1;
}
