// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/block_map.h"

#include <gtest/gtest.h>

namespace vgpu::worker {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t VRAM = 256 * MiB;
constexpr uint64_t VA = APERTURE_BASE + 64 * MiB;

TEST(BlockMap, AWholeAlignedBlockIsMappedAtTheGuestVa) {
  PageRun r{VA, 6 * MiB, BLOCK_BYTES, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0], (BlockRun{VA, 3, 1, true}));
  EXPECT_TRUE(p.refused.empty());
}

TEST(BlockMap, SmallPagesThatMakeOneContiguousBlockAreOneBlock) {
  std::vector<PageRun> runs;
  for (uint64_t off = 0; off < BLOCK_BYTES; off += 64 * 1024)
    runs.push_back({VA + off, 2 * MiB + off, 64 * 1024, true});
  BlockPlan p = plan_blocks(runs, VRAM);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0], (BlockRun{VA, 1, 1, true}));
}

TEST(BlockMap, ConsecutiveBlocksAreCoalesced) {
  PageRun r{VA, 8 * MiB, 3 * BLOCK_BYTES, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0], (BlockRun{VA, 4, 3, true}));
}

TEST(BlockMap, AVaOutsideTheApertureIsRefused) {
  PageRun r{APERTURE_BASE - BLOCK_BYTES, 0, BLOCK_BYTES, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  EXPECT_TRUE(p.runs.empty());
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].reason.find("outside the compute aperture"), std::string::npos);
}

TEST(BlockMap, APartlyMappedBlockIsRefused) {
  PageRun r{VA, 0, MiB, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  EXPECT_TRUE(p.runs.empty());
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].reason.find("whole 2 MiB"), std::string::npos);
}

TEST(BlockMap, AScatteredBlockIsRefused) {
  PageRun runs[] = {{VA, 0, MiB, true}, {VA + MiB, 5 * MiB, MiB, true}};
  BlockPlan p = plan_blocks(runs, VRAM);
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].reason.find("not physically contiguous"), std::string::npos);
}

TEST(BlockMap, AMisalignedPhysicalBlockIsRefused) {
  PageRun r{VA, MiB, BLOCK_BYTES, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].reason.find("not 2 MiB aligned"), std::string::npos);
}

TEST(BlockMap, ABlockReadOnlyInPartIsRefusedAndAWhollyReadOnlyOneIsMappedReadOnly) {
  PageRun runs[] = {{VA, 0, MiB, true}, {VA + MiB, MiB, MiB, false}, {VA + 2 * MiB, 2 * MiB, 2 * MiB, false}};
  BlockPlan p = plan_blocks(runs, VRAM);
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_EQ(p.refused[0].va, VA);
  EXPECT_NE(p.refused[0].reason.find("read-only in part"), std::string::npos);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0], (BlockRun{VA + 2 * MiB, 1, 1, false}));
}

TEST(BlockMap, ABlockBeyondTheVramIsRefused) {
  PageRun r{VA, VRAM, BLOCK_BYTES, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].reason.find("beyond the VM's VRAM"), std::string::npos);
}

TEST(BlockMap, OnlyTheConformingBlocksOfARunAreMapped) {
  // 3 MiB from an aligned start: the first block conforms, the second is half.
  PageRun r{VA, 0, 3 * MiB, true};
  BlockPlan p = plan_blocks({&r, 1}, VRAM);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0], (BlockRun{VA, 0, 1, true}));
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_EQ(p.refused[0].va, VA + BLOCK_BYTES);
}

TEST(MappedBlocks, AnUnchangedBlockIsLeftAloneAndARemappedOneUnmappedFirst) {
  MappedBlocks m;
  using C = MappedBlocks::Change;
  EXPECT_EQ(m.update({VA, 3, 2, true}), (std::vector<C>{{C::map, VA, 3, true}, {C::map, VA + BLOCK_BYTES, 4, true}}));
  EXPECT_TRUE(m.update({VA, 3, 2, true}).empty());
  EXPECT_EQ(m.update({VA + BLOCK_BYTES, 9, 1, true}),
            (std::vector<C>{{C::unmap, VA + BLOCK_BYTES, 4, true}, {C::map, VA + BLOCK_BYTES, 9, true}}));
  EXPECT_EQ(m.block_at(VA + BLOCK_BYTES + 5), 9);
  EXPECT_EQ(m.remove(VA, 2), (std::vector<C>{{C::unmap, VA, 3, true}, {C::unmap, VA + BLOCK_BYTES, 9, true}}));
  EXPECT_EQ(m.block_at(VA), -1);
}

}  // namespace
}  // namespace vgpu::worker
