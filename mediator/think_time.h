// SPDX-License-Identifier: GPL-2.0-or-later
// A VM's think time: how long after its channel runs dry its next launch
// arrives (the guest's completion interrupt, its program's wake-up and its
// next doorbell, through QEMU and, with vgpud, a socket). The turn hold
// waits about that long for the VM (docs/scheduler.md, "Turn hold"), as
// the anticipatory disk scheduler keeps each process's think time (Iyer
// and Druschel, SOSP 2001). The estimate is TCP's retransmission timer's
// (RFC 6298): a smoothed mean and a smoothed mean deviation of the gaps.
// The hold is twice the mean plus four deviations: a steady VM's launches
// arrive within it even when its host threads are preempted (on a loaded
// 2-core machine, mean plus four deviations alone let 7% of holds
// expire), and its length costs only when the VM does not come back.
//
// Not thread-safe: its owner (mediator/turn.h) keeps it under a mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace vgpu::mediator {

class ThinkTime {
 public:
  // RFC 6298's gains: the mean moves by 1/8 of each error, the deviation
  // by 1/4 (its timer is the mean plus 4 deviations; the hold's, above).
  static constexpr unsigned MEAN_SHIFT = 3, DEV_SHIFT = 2, MEANS_IN_HOLD = 2, DEVS_IN_HOLD = 4;

  // The channel ran dry at `at_ns` (its last piece's end).
  void ran_dry(uint64_t at_ns) { dry_at_ = at_ns; }

  // The VM's next launch arrived at `now_ns`: one gap, if the VM was dry.
  // A gap longer than `cap_ns` counts as `cap_ns` (a VM that went idle for
  // a minute is slow, not a minute slow: it recovers in a few launches).
  void came_back(uint64_t now_ns, uint64_t cap_ns) {
    if (!dry_at_) return;
    const uint64_t gap = std::min(now_ns > *dry_at_ ? now_ns - *dry_at_ : 0, cap_ns);
    dry_at_.reset();
    if (!samples_++) {
      mean_ = gap;
      dev_ = gap / 2;
      return;
    }
    const uint64_t err = gap > mean_ ? gap - mean_ : mean_ - gap;
    dev_ = dev_ - (dev_ >> DEV_SHIFT) + (err >> DEV_SHIFT);
    mean_ = mean_ - (mean_ >> MEAN_SHIFT) + (gap >> MEAN_SHIFT);
  }

  // How long to hold a dry turn for this VM: the estimate, within
  // [floor_ns, max_ns]; the floor for a VM with no gap measured yet, and
  // for one whose mean gap is above max_ns (holding for it would mostly
  // leave the GPU idle and then give it away anyway). 0 when floor_ns is 0
  // (holds off).
  uint64_t hold_ns(uint64_t floor_ns, uint64_t max_ns) const {
    if (!floor_ns || !samples_ || mean_ > max_ns) return floor_ns;
    return std::clamp(MEANS_IN_HOLD * mean_ + DEVS_IN_HOLD * dev_, floor_ns, std::max(floor_ns, max_ns));
  }

  uint64_t mean_ns() const { return mean_; }
  uint64_t deviation_ns() const { return dev_; }
  uint64_t samples() const { return samples_; }

 private:
  std::optional<uint64_t> dry_at_;
  uint64_t mean_ = 0, dev_ = 0, samples_ = 0;
};

}  // namespace vgpu::mediator
