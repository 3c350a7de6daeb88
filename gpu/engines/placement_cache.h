// SPDX-License-Identifier: GPL-2.0-or-later
// Where the buffers of recent device work lie in physical memory
// (docs/cuda.md, "Placement cache"). A launch on the device translates
// each buffer into physical runs; a stream of launches on the same
// buffers would walk the same translations every time (gemm1's 62 MB of
// operands: about a thousand TLB look-ups per launch). The MMU may use a
// translation until the address space is invalidated, so a placement
// stays good until the MMU's next invalidate (Mmu::generation()), exactly
// as the TLB entries it was made of: a cache hit sees what a walk through
// the TLB would.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "gpu/mem/mmu.h"

namespace vgpu::gpu {

// A VA range as physical runs, in VA order; whether any is in system
// memory (then the work is the model's: docs/cuda.md).
struct Placed {
  std::vector<PhysRun> runs;
  uint64_t bytes = 0;
  bool sysmem = false;
  bool contiguous() const { return runs.size() == 1; }
};

class PlacementCache {
 public:
  // Ranges remembered: a launch has at most a dozen buffers, a few
  // channels take turns.
  static constexpr size_t CAPACITY = 64;

  struct Key {
    uint64_t pdb, limit, va, bytes;
    bool write, priv;
    bool operator==(const Key&) const = default;
  };
  static Key key(const AccessContext& as, uint64_t va, uint64_t bytes, bool write) {
    return {as.pdb, as.limit, va, bytes, write, as.priv};
  }

  // The placement of `k` made at MMU generation `generation`, if any.
  std::optional<Placed> find(const Key& k, uint64_t generation);
  // Remembers a placement walked at `generation` (read before the walk).
  void add(const Key& k, uint64_t generation, const Placed& p);
  uint64_t hits() const;

 private:
  struct Entry {
    Key key;
    uint64_t generation;
    Placed placed;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // most recently used last
  uint64_t hits_ = 0;
};

}  // namespace vgpu::gpu
