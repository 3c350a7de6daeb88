// SPDX-License-Identifier: GPL-2.0-or-later
// The workload suite (docs/benchmarks.md): each workload sets up its
// inputs from a deterministic seed, times its GPU part through the guest
// runtime API and checks the output against a CPU reference. The same
// function runs natively and inside a testbed VM; only the Port differs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "testbed/testbed.h"

namespace vgpu::testbed::workloads {

// Where the compute workloads' (gemm*, conv*, matmul320, MMUL) inputs
// come from and outputs go, each timed run (kernel_io.h): resident in VRAM
// (the default), ordinary host memory, or pinned host memory.
enum class InputPath { resident, pageable, pinned };
const char* input_path_name(InputPath p);
[[nodiscard]] Result<InputPath> parse_input_path(std::string_view name);

struct WorkloadOptions {
  uint32_t runs = 1;                       // timed iterations
  bool reduced = false;                    // smaller problem sizes (sanitizer tests)
  uint64_t seed = 1;                       // inputs are a function of this alone
  uint64_t bandwidth_bytes = 0;            // bandwidth workloads; 0: 64 MiB (reduced: 4 MiB)
  uint64_t spin_ns = 0;                    // LOOP: each spin; 0: 1 ms (reduced: 100 us)
  uint32_t check_samples = 512;            // sampled outputs checked in double
  InputPath inputs = InputPath::resident;  // compute workloads only
  // Called at the first timed launch (true) and at every timed run's end
  // (false): the runner takes the vGPU's counters there, so they cover
  // the timed part alone. May be empty.
  std::function<void(bool begin)> on_timed;
};

struct WorkloadResult {
  uint32_t runs = 0;
  std::vector<double> seconds;  // per timed run (first launch to fence completion)
  bool correct = false;
  uint64_t checksum = 0;    // hash of the output bytes: equal across modes
  std::string detail;       // sizes, check summary, rates
  double work_per_run = 0;  // in work_unit: flop, byte or kernel
  std::string_view work_unit = "run";
  std::string_view inputs;  // input_path_name() where the workload honours WorkloadOptions::inputs, else empty
  uint64_t launches = 0;    // kernels and copies the workload itself launched
  double timed_begin = 0;   // steady clock (s): first timed launch
  double timed_end = 0;     // steady clock (s): last fence completion
  // Workloads that time single launches (launch): the median over them, us.
  std::optional<double> launch_p50_us;
};

using WorkloadFn = std::function<Result<WorkloadResult>(Vm&, const WorkloadOptions&)>;

struct WorkloadSpec {
  std::string_view name;
  WorkloadFn fn;
  uint32_t default_runs;
  std::string what;                  // one line for tables and docs
  int64_t direct_transfer_max = -1;  // DeviceOptions override; -1: the default
};

// Every workload, in the suite's order.
std::span<const WorkloadSpec> registry();
const WorkloadSpec* find(std::string_view name);

double median(std::vector<double> v);

}  // namespace vgpu::testbed::workloads
