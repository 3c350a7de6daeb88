// SPDX-License-Identifier: GPL-2.0-or-later
// Moving a vGPU between two testbeds in one process (docs/migration.md
// §12): the guest's driver talks through a port that can be pointed at
// the destination, a chain of chained saxpy jobs to compare with an
// unmoved run, and the move itself (image plus VRAM copy). Shared by the
// tests/migration_*_test.cc files.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "driver/runtime.h"
#include "mediator/vgpu.h"
#include "testbed/testbed.h"

namespace vgpu::mediator::moving {

inline constexpr uint64_t VM_VRAM = 64 * MiB;
inline constexpr uint32_t VM_CHANNELS = 8;
inline constexpr uint32_t N = 4096;     // elements per buffer
inline constexpr int JOBS_BEFORE = 24;  // submitted on A, not waited for
inline constexpr int JOBS_AFTER = 16;   // submitted on B
inline constexpr uint64_t FREEZE_NS = 5'000'000'000;

// fv-naive: every BAR access trapped, so the driver keeps no mapping of
// the source's VRAM.
std::unique_ptr<testbed::Testbed> make_testbed(uint64_t vram = VM_VRAM);
// The same in another mode (tests/migration_test.cc moves each mode).
std::unique_ptr<testbed::Testbed> make_testbed(testbed::Mode mode, uint64_t vram = VM_VRAM);

// The guest's side of the move: the driver talks to whichever vGPU is
// current, by trapped accesses only, and polls (the interrupt counts of
// two vGPUs are not one sequence).
class MovingPort final : public driver::Port {
 public:
  explicit MovingPort(driver::Port* target) : target_(target) {}
  void move_to(driver::Port* target) { target_ = target; }
  uint32_t read32(driver::Bar bar, uint64_t offset) override { return target_->read32(bar, offset); }
  void write32(driver::Bar bar, uint64_t offset, uint32_t value) override { target_->write32(bar, offset, value); }
  std::span<std::byte> map(driver::Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(driver::Bar bar) const override { return target_->bar_size(bar); }
  void relax() override { target_->relax(); }
  std::string name() const override { return "moving"; }

 private:
  driver::Port* target_;
};

// What RAM migration does for VRAM: the destination's partition gets the
// source's bytes.
void copy_partition(testbed::Testbed& from, testbed::Testbed& to);

// The guest's driver opened on a port, with one context.
struct GuestContext {
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;

  Status open_context(driver::Port& port);
};

// Jobs k: y = 1.5 x + y, each reading the previous job's y.
struct Chain : GuestContext {
  driver::Buffer x{}, y{};

  Status open(driver::Port& port);
  Status submit(int jobs);  // not waited for
  Result<std::vector<std::byte>> result();
  // Waits for the jobs and fails when the output is not `want` (the
  // unmoved chain's).
  Status ends_as(const std::vector<std::byte>& want);
};

// The output of `jobs` chained jobs on a vGPU that never moves.
Result<std::vector<std::byte>> unmoved_output(int jobs);

// The move itself, from a frozen source: its image and its VRAM go to the
// destination, which imports the image.
Status move_vgpu(testbed::Testbed& from, testbed::Testbed& to);

}  // namespace vgpu::mediator::moving
