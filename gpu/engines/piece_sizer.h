// SPDX-License-Identifier: GPL-2.0-or-later
// Timed pieces of divided engine work (docs/spec/vgpu.md §10.5, a timed
// CHAN_SLICE): a piece runs its work in chunks, timing them, until it has
// taken about the channel's slice time. The first chunk is small (one
// thread block's units); each later one is sized from the speed measured
// so far, growing to at most CHUNK_GROWTH times what the piece has done,
// so that a first chunk too quick to time well cannot make the next run long.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vgpu::gpu {

class PieceSizer {
 public:
  static constexpr uint64_t CHUNK_GROWTH = 4;

  // A piece of about target_ns whose first chunk is first_units.
  PieceSizer(uint64_t target_ns, uint64_t first_units)
      : target_ns_(target_ns), first_(std::max<uint64_t>(first_units, 1)) {}

  // The next chunk after `done` units of the piece took `elapsed_ns`, at
  // most `left`; 0 when the piece has had its time (or nothing is left).
  // A piece always runs its first chunk, so every piece makes progress.
  // A longer piece: the work's fixed cost per chunk asks for it.
  void set_target(uint64_t target_ns) { target_ns_ = target_ns; }
  uint64_t target() const { return target_ns_; }

  uint64_t next(uint64_t done, uint64_t elapsed_ns, uint64_t left) const {
    if (left == 0) return 0;
    if (done == 0) return std::min(first_, left);
    if (elapsed_ns >= target_ns_) return 0;
    // Units that fit the time left at the speed so far.
    const auto fit = static_cast<uint64_t>(static_cast<unsigned __int128>(target_ns_ - elapsed_ns) * done /
                                           std::max<uint64_t>(elapsed_ns, 1));
    return std::clamp<uint64_t>(fit, 1, std::min(left, done * CHUNK_GROWTH));
  }

 private:
  uint64_t target_ns_;
  uint64_t first_;
};

}  // namespace vgpu::gpu
