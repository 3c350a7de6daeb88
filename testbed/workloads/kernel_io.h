// SPDX-License-Identifier: GPL-2.0-or-later
// Where a compute workload's inputs come from and its output goes
// (WorkloadOptions::inputs, `vgpu-bench workloads --inputs`):
//  - resident (the default): the inputs are uploaded once before the timed
//    runs and the output downloaded once after them; a run times the
//    kernel alone.
//  - pageable: every timed run uploads the inputs from ordinary host
//    memory and downloads the output into it with upload()/download()
//    (BAR1 up to direct_transfer_max, staging and the copy engine above),
//    as cudaMemcpy from malloc'd memory.
//  - pinned: every timed run copies the inputs from pinned host buffers
//    (Context::alloc_host, filled once before the timed runs) and the
//    output into one on the copy engine (upload_pinned/download_pinned:
//    DMA through sysmem PTEs), as cudaMemcpy from cudaMallocHost memory.
// In every path the inputs are in VRAM once before the first timed run
// (an untimed upload by the path itself), so run 0 does the same work as
// the others; the output checked is the last run's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "driver/runtime.h"
#include "testbed/workloads/support.h"
#include "testbed/workloads/workload.h"

namespace vgpu::testbed::workloads {

class KernelIo {
 public:
  // Device buffers for `inputs` (uploaded) and an output of out_floats.
  // `device` is the context's device options (the transfer thresholds).
  [[nodiscard]] static Result<KernelIo> create(driver::Context& ctx, const driver::DeviceOptions& device,
                                               InputPath path, std::vector<std::span<const float>> inputs,
                                               size_t out_floats);

  driver::Buffer input(size_t i) const { return inputs_[i].device; }
  driver::Buffer output() const { return output_.device; }

  // Inside a timed run: before the launch (the inputs in) and after its
  // wait (the output out). Nothing for resident inputs.
  [[nodiscard]] Status before_launch();
  [[nodiscard]] Status after_wait();
  // Copies and kernels these two submit per run beyond the kernel itself.
  uint64_t transfer_launches_per_run() const;

  // The output after the timed runs (resident: downloaded now).
  [[nodiscard]] Result<std::vector<float>> result();
  // "inputs resident in VRAM", or the path with the bytes per run and the
  // median time of a run's transfers (before_launch + after_wait).
  std::string describe() const;
  const std::vector<double>& transfer_seconds() const { return transfer_s_; }

 private:
  struct Side {
    std::span<const float> host;       // resident/pageable: the caller's data
    std::span<std::byte> pinned_view;  // pinned: the CPU's view of `pinned`
    driver::Buffer pinned{};
    driver::Buffer device{};
    uint64_t bytes = 0;
  };
  KernelIo(driver::Context& ctx, const driver::DeviceOptions& device, InputPath path)
      : ctx_(&ctx), device_(device), path_(path) {}
  uint64_t launches_for(uint64_t bytes) const;

  driver::Context* ctx_;
  driver::DeviceOptions device_;
  InputPath path_;
  std::vector<Side> inputs_;
  Side output_;
  std::vector<float> out_host_;     // pageable: the output's host copy
  double in_s_ = 0;                 // this run's before_launch
  std::vector<double> transfer_s_;  // per run: before_launch + after_wait
};

// A compute workload's timed part (timed_runs): each run moves the inputs
// (before_launch), launches `launch()` (a driver call's Result<Fence>),
// waits for it and moves the output (after_wait).
template <typename Launch>
Status timed_kernel_runs(driver::Context& c, KernelIo& io, const WorkloadOptions& o, WorkloadResult& r, Launch launch) {
  return timed_runs(o, r, [&](uint32_t) -> Result<uint32_t> {
    if (Status st = io.before_launch(); !st) return std::unexpected(st.error());
    auto f = launch();
    if (!f) return std::unexpected(f.error());
    if (Status st = c.wait(*f); !st) return std::unexpected(st.error());
    if (Status st = io.after_wait(); !st) return std::unexpected(st.error());
    return static_cast<uint32_t>(1 + io.transfer_launches_per_run());
  });
}

}  // namespace vgpu::testbed::workloads
