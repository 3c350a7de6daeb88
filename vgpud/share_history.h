// SPDX-License-Identifier: GPL-2.0-or-later
// Each VM's GPU time sampled every 100 ms over the last 10 s, for what
// vgpuctl shows of a window (the last 1 s or 10 s):
//   share        a VM's GPU time / all VMs' GPU time in it (as bench
//                sched defines share): who got the GPU while it was used;
//   utilization  a VM's GPU time / the window's wall time: how busy it
//                kept the GPU; the GPU's own is the sum over its VMs.
// One busy VM alone has share 1 whatever its utilization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>

namespace vgpu::vgpud {

class ShareHistory {
 public:
  static constexpr uint64_t PERIOD_NS = 100'000'000;
  static constexpr size_t KEEP = 101;  // 10 s of periods and the sample before

  // One sample: every attached VM's total GPU time at `now_ns`.
  void sample(uint64_t now_ns, const std::map<uint32_t, uint64_t>& gpu_ns);
  // The VM's share of the GPU time used by all VMs over the last window.
  double share(uint32_t vm, uint64_t window_ns) const;
  // The VM's GPU time over the window's wall time.
  double utilization(uint32_t vm, uint64_t window_ns) const;
  // All VMs' GPU time over the window's wall time.
  double gpu_utilization(uint64_t window_ns) const;

 private:
  struct Sample {
    uint64_t t;
    std::map<uint32_t, uint64_t> gpu_ns;
  };
  struct Used {
    uint64_t mine = 0, all = 0, wall_ns = 0;
  };
  // GPU time of `vm` and of all VMs between the window's first and last samples.
  Used used(uint32_t vm, uint64_t window_ns) const;
  std::deque<Sample> samples_;
};

}  // namespace vgpu::vgpud
