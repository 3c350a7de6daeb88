// SPDX-License-Identifier: GPL-2.0-or-later
// The model's PTX interpreter (docs/ptx.md): runs thread blocks of one
// entry of a parsed module. Warps of 32 lanes run in lockstep with active
// masks and reconvergence; every global access (and every generic access
// that is not shared, local or param memory) goes through GlobalMemory,
// which the compute engine backs with the channel's MMU: no host pointer
// is ever formed from a value the kernel computed without it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ptx/module.h"

namespace vgpu::ptx {

namespace exec {
struct LaunchState;
}

struct MemoryFault {
  uint64_t va = 0;
  bool write = false;
  std::string reason;  // "not mapped", "read-only", ...
};

// Global memory as the kernel sees it: GPU virtual addresses.
class GlobalMemory {
 public:
  virtual ~GlobalMemory() = default;
  // Host bytes of [va, va + bytes) for one access of `bytes` (1, 2, 4, 8
  // or 16) at an address aligned to `bytes`, so the range never crosses a
  // 4 KiB page. The pointer is valid until the launch's blocks return.
  [[nodiscard]] virtual std::expected<std::byte*, MemoryFault> access(uint64_t va, uint32_t bytes, bool write) = 0;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  uint32_t entry = 0;  // index into Module::entries()
  Dim3 grid;
  Dim3 block;
  uint32_t dynamic_shared_bytes = 0;
  std::span<const std::byte> params;  // the entry's packed parameter buffer (param_bytes at least)
  uint64_t data_va = 0;               // where the module's data segment lives (Module::data_bytes())
};

// Bounds on one launch's host resources (docs/ptx.md, "Limits").
struct ExecLimits {
  uint32_t max_shared_bytes = 48u << 10;  // static + dynamic, per block
  uint32_t max_call_depth = 64;
  uint64_t max_local_bytes_per_thread = 16u << 10;  // all active frames of one thread
  // The host bytes a launch's state may take: the resident block's register
  // frames, parameter areas, local stacks and shared memory. A resumable
  // launch keeps them between runs, so this bounds what one yielded launch
  // holds (docs/ptx.md, "Resumable runs").
  uint64_t max_state_bytes = uint64_t{32} << 20;
};

enum class ExecStatus : uint32_t {
  ok = 0,
  mmu_fault = 1,   // GlobalMemory refused an access (va, write)
  misaligned = 2,  // an access not aligned to its size
  trap = 3,        // the kernel executed trap (or brkpt)
  timeout = 4,     // keep_going returned false
  resource = 5,    // a launch bound: shared memory, call depth, local memory
  bad_launch = 6,  // entry index, geometry or parameter buffer size wrong
  illegal = 7,     // an instruction the interpreter cannot execute with these operands (divergent barrier, ...)
};

struct ExecError {
  ExecStatus status;
  uint64_t va = 0;     // faulting address (mmu_fault, misaligned)
  bool write = false;  // mmu_fault
  uint32_t line = 0;   // PTX source line of the instruction, 0 if none
  std::string message;
};

struct ExecStats {
  uint64_t warp_instructions = 0;  // instructions issued, one per warp per instruction
  uint64_t thread_instructions = 0;
};

// Polled between warp instructions, every `poll_every` of them:
// keep_going returning false stops the launch with ExecStatus::timeout;
// then, for LaunchRun::run only, the run yields (returns, to be resumed)
// once `yield_after` warp instructions ran in this call (0: no bound) or
// yield_now returns true. fast_path off runs every instruction through
// the executor table (docs/ptx.md "Fast path"): the same results, for the
// tests that compare the two and the bench that times both.
struct ExecControl {
  std::function<bool()> keep_going;
  uint32_t poll_every = 4096;
  uint64_t yield_after = 0;
  std::function<bool()> yield_now;
  bool fast_path = true;
};

// A launch executed in runs that stop at an instruction boundary and
// resume there (kernel slicing inside a thread block, docs/ptx.md
// "Resumable runs"). Between runs it keeps the resident block (every
// warp's lanes, registers, PCs, call frames, local stacks, shared memory,
// barrier arrivals and the round robin's place), the next block and the
// counters, so a launch run in any number of runs computes exactly what
// one run computes. The module must outlive it; the parameters are copied.
class LaunchRun {
 public:
  enum class State { finished, yielded };

  // Checks the launch (bad_launch, resource) for blocks [first_block, end_block).
  [[nodiscard]] static std::expected<std::unique_ptr<LaunchRun>, ExecError> start(const Module& module,
                                                                                  const LaunchConfig& launch,
                                                                                  uint64_t first_block,
                                                                                  uint64_t end_block,
                                                                                  const ExecLimits& limits = {});
  ~LaunchRun();

  // Runs until the blocks before `stop_block` (clamped to the range's end)
  // finished, the control asks to yield, or an error. Pages `memory` gave
  // are used only within the call: a later run translates again. After an
  // error the launch is over (further runs return the same error).
  [[nodiscard]] std::expected<State, ExecError> run(GlobalMemory& memory, const ExecControl& control = {},
                                                    uint64_t stop_block = ~uint64_t{0});

  bool finished() const;
  uint64_t next_block() const;     // the first block not finished
  const ExecStats& stats() const;  // of every run so far
  uint64_t state_bytes() const;    // host bytes kept between runs

 private:
  LaunchRun() = default;
  std::unique_ptr<exec::LaunchState> state_;
  std::optional<ExecError> failed_;
};

// Runs thread blocks [first_block, end_block) of the launch's grid (blocks
// numbered x fastest, then y, then z), one block after another, in one
// LaunchRun::run that never yields. A launch may be run in several calls
// (kernel slicing); each call's blocks see the whole grid's %nctaid and
// their own %ctaid.
[[nodiscard]] std::expected<ExecStats, ExecError> run_blocks(const Module& module, const LaunchConfig& launch,
                                                             GlobalMemory& memory, uint64_t first_block,
                                                             uint64_t end_block, const ExecLimits& limits = {},
                                                             const ExecControl& control = {});

const char* exec_status_name(ExecStatus s);

}  // namespace vgpu::ptx
