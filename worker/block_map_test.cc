// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/block_map.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

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

// Runs that make one 2 MiB block the worker cannot map: refused with a
// reason naming why, and nothing mapped.
struct RefusedCase {
  const char* name;
  std::vector<PageRun> runs;
  const char* reason;
  friend void PrintTo(const RefusedCase& c, std::ostream* os) { *os << c.name; }
};

class RefusedBlock : public ::testing::TestWithParam<RefusedCase> {};

TEST_P(RefusedBlock, IsRefusedWithItsReason) {
  const RefusedCase& c = GetParam();
  BlockPlan p = plan_blocks(c.runs, VRAM);
  EXPECT_TRUE(p.runs.empty());
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_NE(p.refused[0].reason.find(c.reason), std::string::npos) << p.refused[0].reason;
}

INSTANTIATE_TEST_SUITE_P(
    BlockMap, RefusedBlock,
    ::testing::Values(
        RefusedCase{"VaOutsideTheAperture",
                    {{APERTURE_BASE - BLOCK_BYTES, 0, BLOCK_BYTES, true}},
                    "outside the compute aperture"},
        RefusedCase{"PartlyMapped", {{VA, 0, MiB, true}}, "whole 2 MiB"},
        RefusedCase{"Scattered", {{VA, 0, MiB, true}, {VA + MiB, 5 * MiB, MiB, true}}, "not physically contiguous"},
        RefusedCase{"MisalignedPhysical", {{VA, MiB, BLOCK_BYTES, true}}, "not 2 MiB aligned"},
        RefusedCase{"BeyondTheVram", {{VA, VRAM, BLOCK_BYTES, true}}, "beyond the VM's VRAM"}),
    [](const ::testing::TestParamInfo<RefusedCase>& p) { return std::string(p.param.name); });

TEST(BlockMap, ABlockReadOnlyInPartIsRefusedAndAWhollyReadOnlyOneIsMappedReadOnly) {
  PageRun runs[] = {{VA, 0, MiB, true}, {VA + MiB, MiB, MiB, false}, {VA + 2 * MiB, 2 * MiB, 2 * MiB, false}};
  BlockPlan p = plan_blocks(runs, VRAM);
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_EQ(p.refused[0].va, VA);
  EXPECT_NE(p.refused[0].reason.find("read-only in part"), std::string::npos);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0], (BlockRun{VA + 2 * MiB, 1, 1, false}));
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
