// SPDX-License-Identifier: GPL-2.0-or-later
// A bounded scheduler turn (docs/scheduler.md, "Bounded turns"). GPU work
// is not preemptive, so a turn is given to the GPU in pieces of one GPFIFO
// entry: when a piece has run, the turn goes on with the next piece while
// its time slice lasts, and otherwise ends at that entry boundary (the
// VM's remaining entries wait in the scheduler's queue). A slice of 0
// turns this off: a turn runs everything up to the guest's GP_PUT.
//
// Not thread-safe: the turn (mediator/turn.h) uses it from the one
// event-handling thread.
// bounded(), slice_ns() and has_time() read only the slice, fixed at
// construction, and may be called from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace vgpu::mediator {

class TurnSlice {
 public:
  explicit TurnSlice(uint64_t slice_ns) : slice_ns_(slice_ns) {}

  bool bounded() const { return slice_ns_ != 0; }
  uint64_t slice_ns() const { return slice_ns_; }

  // A piece of the turn of submission `seq` (of `vm`) ran from start_ns:
  // returns when the turn's first piece started.
  uint64_t piece_ran(uint32_t vm, uint64_t seq, uint64_t start_ns) {
    if (!turn_ || turn_->vm != vm || turn_->seq != seq) turn_ = Turn{vm, seq, start_ns};
    return turn_->start_ns;
  }
  // The length of a turn the scheduler gave `length_ns` (0: the slice).
  uint64_t length(uint64_t length_ns) const { return length_ns ? std::min(length_ns, slice_ns_) : slice_ns_; }
  // Whether a turn that started at start_ns, and that the scheduler gave
  // `length_ns` (0: the whole slice), may go on at now_ns.
  bool has_time(uint64_t start_ns, uint64_t now_ns, uint64_t length_ns = 0) const {
    return bounded() && now_ns >= start_ns && now_ns - start_ns < length(length_ns);
  }

 private:
  struct Turn {
    uint32_t vm;
    uint64_t seq;
    uint64_t start_ns;
  };
  uint64_t slice_ns_;
  std::optional<Turn> turn_;
};

}  // namespace vgpu::mediator
