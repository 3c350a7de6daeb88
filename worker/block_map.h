// SPDX-License-Identifier: GPL-2.0-or-later
// The compute aperture's rules (spec §10.7, docs/cuda-worker.md "VRAM"):
// which of a launch's mappings a worker maps at the guest's own addresses
// as 2 MiB VRAM blocks (block k = the worker's cuMemCreate handle k), and
// which it leaves unmapped (a user kernel touching them faults on the GPU).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>
#include "vgpu/classes.h"

namespace vgpu::worker {

inline constexpr uint64_t BLOCK_BYTES = cls::compute::APERTURE_BLOCK;
inline constexpr uint64_t APERTURE_BASE = cls::compute::APERTURE_BASE;
inline constexpr uint64_t APERTURE_END = cls::compute::APERTURE_END;
// The physical window: the engines' copies and built-in kernels reach VRAM
// address p at PHYS_BASE + p (the same handles as the aperture's blocks,
// mapped a second time), apart from the guest's VAs in the aperture.
inline constexpr uint64_t PHYS_BASE = APERTURE_END;
inline constexpr uint64_t PHYS_BYTES = uint64_t{256} << 30;

// One run of the shadow page tables: `bytes` at `va` map `phys`
// (an offset into the VM's VRAM) onwards.
struct PageRun {
  uint64_t va, phys, bytes;
  bool writable;
};

// `count` blocks mapped at `va` from VRAM block `block` on.
struct BlockRun {
  uint64_t va;
  uint32_t block, count;
  bool writable;
  bool operator==(const BlockRun&) const = default;
};

// A 2 MiB VA block of the mappings left unmapped, and why.
struct Refusal {
  uint64_t va;
  std::string reason;
};

struct BlockPlan {
  std::vector<BlockRun> runs;  // VA order, coalesced
  std::vector<Refusal> refused;
};

// The blocks of the page runs that conform: in the aperture, VA and
// physical address 2 MiB aligned, one physically contiguous run over the
// whole 2 MiB, all writable or all read-only, inside `vram_bytes`.
BlockPlan plan_blocks(std::span<const PageRun> runs, uint64_t vram_bytes);

// The worker's record of what each VA block holds: the changes a run
// needs (a block already mapped to the same handle and access is left
// alone; one mapped to another is unmapped first).
class MappedBlocks {
 public:
  struct Change {
    enum Kind { map, unmap } kind;
    uint64_t va;
    uint32_t block;
    bool writable;
    bool operator==(const Change&) const = default;
  };
  std::vector<Change> update(const BlockRun& run);
  std::vector<Change> remove(uint64_t va, uint32_t count);
  // The block mapped at `va`'s 2 MiB block, or -1.
  int64_t block_at(uint64_t va) const;
  size_t size() const { return blocks_.size(); }
  void clear() { blocks_.clear(); }

 private:
  struct Entry {
    uint32_t block;
    bool writable;
  };
  std::map<uint64_t, Entry> blocks_;  // VA block base -> what is mapped there
};

}  // namespace vgpu::worker
