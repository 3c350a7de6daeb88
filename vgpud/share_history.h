// SPDX-License-Identifier: GPL-2.0-or-later
// Each VM's GPU time sampled every 100 ms over the last 10 s, for the
// shares vgpuctl shows (a VM's GPU time over a window / all VMs' GPU time
// in it, as bench sched defines share).
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

 private:
  struct Sample {
    uint64_t t;
    std::map<uint32_t, uint64_t> gpu_ns;
  };
  std::deque<Sample> samples_;
};

}  // namespace vgpu::vgpud
