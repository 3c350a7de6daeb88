// SPDX-License-Identifier: GPL-2.0-or-later
// Test support: FlatMemory at a fixed VA base, page granular (addresses
// outside it fault as "not mapped"), and a launch helper that packs
// parameters at the entry's offsets.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpu/ptx/flat_memory.h"
#include "gpu/ptx/interpreter.h"
#include "gpu/ptx/test_kernels.h"
#include "ptx/params.h"

namespace vgpu::ptx::testing {

// `bytes` rounded up to whole pages, handed out in steps of 256; an
// alloc() past the end is a test failure. Counts its accesses.
class FakeMemory : public FlatMemory {
 public:
  static constexpr uint64_t kBase = 0x10'0000'0000ull;
  explicit FakeMemory(size_t bytes) : FlatMemory(kBase, align_up(bytes, HOST_PAGE), 256) {}
  uint64_t alloc(size_t bytes) { return fits(FlatMemory::alloc(bytes)); }
  template <typename T>
  uint64_t put(const std::vector<T>& v) {
    return fits(FlatMemory::put(v));
  }
  std::expected<std::byte*, MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
    ++accesses;
    return FlatMemory::access(va, bytes, write);
  }
  uint64_t accesses = 0;

 private:
  uint64_t fits(uint64_t va) {
    EXPECT_LE(used(), size()) << "allocated past the end of the memory";
    return va;
  }
};

// The parameter buffer of one entry (ptx/params.h); launch() checks that
// every set() named a parameter of its size.
class Params : public ParamBuffer {
 public:
  Params(const Module& m, std::string_view entry)
      : ParamBuffer(m.entries()[static_cast<size_t>(m.find_entry(entry))]) {}
};

// kKernels (test_kernels.h) parsed once for every test that launches
// them (a parse error is a test failure).
inline const Module& kernels() {
  static auto m = [] {
    auto r = parse_module(kKernels);
    EXPECT_TRUE(r) << r.error().message;
    return *r;
  }();
  return *m;
}

// How launch() runs: 0 (the default) in one run_blocks call; k > 0 as a
// LaunchRun that yields every k warp instructions and is resumed until it
// finishes (the interpreter tests run both ways: the results must agree).
inline uint64_t& yield_every() {
  static uint64_t k = 0;
  return k;
}
// Runs of the last resumable launch().
inline uint64_t& last_runs() {
  static uint64_t n = 0;
  return n;
}

inline std::expected<ExecStats, ExecError> run_resumably(const Module& m, const LaunchConfig& cfg, FakeMemory& mem,
                                                         uint64_t blocks, const ExecLimits& limits,
                                                         const ExecControl& control) {
  auto run = LaunchRun::start(m, cfg, 0, blocks, limits);
  if (!run) return std::unexpected(run.error());
  ExecControl c = control;
  c.poll_every = 1;
  c.yield_after = yield_every();
  last_runs() = 0;
  for (;;) {
    ++last_runs();
    auto r = (*run)->run(mem, c);
    if (!r) return std::unexpected(r.error());
    if (*r == LaunchRun::State::finished) return (*run)->stats();
  }
}

inline std::expected<ExecStats, ExecError> launch(const Module& m, FakeMemory& mem, std::string_view entry, Dim3 grid,
                                                  Dim3 block, const Params& p, uint32_t dyn_shared = 0,
                                                  const ExecLimits& limits = {}, const ExecControl& control = {}) {
  LaunchConfig cfg;
  cfg.entry = static_cast<uint32_t>(m.find_entry(entry));
  cfg.grid = grid;
  cfg.block = block;
  cfg.dynamic_shared_bytes = dyn_shared;
  EXPECT_TRUE(p.ok()) << "a parameter set with the wrong size";
  cfg.params = p.bytes();
  if (m.data_bytes()) {
    cfg.data_va = mem.put(m.initial_data());
  }
  uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  if (yield_every()) return run_resumably(m, cfg, mem, blocks, limits, control);
  return run_blocks(m, cfg, mem, 0, blocks, limits, control);
}

// launch() with the interpreter's fast path on or off (ExecControl::fast_path).
inline std::expected<ExecStats, ExecError> launch_on_path(bool fast, const Module& m, FakeMemory& mem,
                                                          std::string_view entry, Dim3 grid, Dim3 block,
                                                          const Params& p, uint32_t dyn_shared = 0,
                                                          ExecControl control = {}) {
  control.fast_path = fast;
  return launch(m, mem, entry, grid, block, p, dyn_shared, {}, control);
}

// `bytes` bytes of `mem` from `at`.
inline std::vector<std::byte> bytes_at(FakeMemory& mem, uint64_t at, size_t bytes) {
  const std::byte* b = mem.at<std::byte>(at);
  return {b, b + bytes};
}

}  // namespace vgpu::ptx::testing
