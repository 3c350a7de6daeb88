// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/block_map.h"

#include <algorithm>
#include <cstdio>

namespace vgpu::worker {

namespace {

struct Piece {
  uint64_t offset, phys, bytes;  // offset within the VA block
  bool writable;
};

std::string hex(uint64_t v) {
  char s[32];
  snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(v));
  return s;
}

// Why the pieces of one VA block do not make a block, or "" if they do.
std::string check_block(uint64_t va, std::vector<Piece>& pieces, uint64_t vram_bytes) {
  if (va < APERTURE_BASE || va + BLOCK_BYTES > APERTURE_END) return "outside the compute aperture";
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
  uint64_t at = 0;
  uint64_t phys0 = pieces.front().phys - pieces.front().offset;
  for (const Piece& p : pieces) {
    if (p.offset != at) return p.offset > at ? "not mapped over the whole 2 MiB" : "mapped twice";
    if (p.phys != phys0 + p.offset) return "not physically contiguous";
    if (p.writable != pieces.front().writable) return "read-only in part";
    at += p.bytes;
  }
  if (at != BLOCK_BYTES) return "not mapped over the whole 2 MiB";
  if (phys0 % BLOCK_BYTES != 0) return "physical address not 2 MiB aligned";
  if (phys0 + BLOCK_BYTES > vram_bytes) return "beyond the VM's VRAM";
  return "";
}

}  // namespace

BlockPlan plan_blocks(std::span<const PageRun> runs, uint64_t vram_bytes) {
  std::map<uint64_t, std::vector<Piece>> by_block;
  for (const PageRun& r : runs) {
    uint64_t done = 0;
    while (done < r.bytes) {
      uint64_t va = r.va + done;
      uint64_t base = va - va % BLOCK_BYTES;
      uint64_t n = std::min(r.bytes - done, base + BLOCK_BYTES - va);
      by_block[base].push_back(Piece{va - base, r.phys + done, n, r.writable});
      done += n;
    }
  }
  BlockPlan plan;
  for (auto& [va, pieces] : by_block) {
    std::string why = check_block(va, pieces, vram_bytes);
    if (!why.empty()) {
      plan.refused.push_back(Refusal{va, "VA " + hex(va) + ": " + why});
      continue;
    }
    auto block = static_cast<uint32_t>(pieces.front().phys / BLOCK_BYTES);
    bool w = pieces.front().writable;
    if (!plan.runs.empty()) {
      BlockRun& last = plan.runs.back();
      if (last.va + last.count * BLOCK_BYTES == va && last.block + last.count == block && last.writable == w) {
        last.count++;
        continue;
      }
    }
    plan.runs.push_back(BlockRun{va, block, 1, w});
  }
  return plan;
}

std::vector<MappedBlocks::Change> MappedBlocks::update(const BlockRun& run) {
  std::vector<Change> out;
  for (uint32_t i = 0; i < run.count; i++) {
    uint64_t va = run.va + i * BLOCK_BYTES;
    uint32_t block = run.block + i;
    auto it = blocks_.find(va);
    if (it != blocks_.end()) {
      if (it->second.block == block && it->second.writable == run.writable) continue;
      out.push_back(Change{Change::unmap, va, it->second.block, it->second.writable});
    }
    out.push_back(Change{Change::map, va, block, run.writable});
    blocks_[va] = Entry{block, run.writable};
  }
  return out;
}

std::vector<MappedBlocks::Change> MappedBlocks::remove(uint64_t va, uint32_t count) {
  std::vector<Change> out;
  for (uint32_t i = 0; i < count; i++) {
    auto it = blocks_.find(va + i * BLOCK_BYTES);
    if (it == blocks_.end()) continue;
    out.push_back(Change{Change::unmap, it->first, it->second.block, it->second.writable});
    blocks_.erase(it);
  }
  return out;
}

int64_t MappedBlocks::block_at(uint64_t va) const {
  auto it = blocks_.find(va - va % BLOCK_BYTES);
  return it == blocks_.end() ? -1 : static_cast<int64_t>(it->second.block);
}

}  // namespace vgpu::worker
