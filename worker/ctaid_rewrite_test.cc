// SPDX-License-Identifier: GPL-2.0-or-later
// The %ctaid rewrite checked on the model's interpreter: the rewritten
// module run in pieces writes exactly what the original writes run whole.
#include "worker/ctaid_rewrite.h"

#include <gtest/gtest.h>

#include <cstring>
#include "gpu/ptx/interpreter.h"
#include "ptx/module.h"

namespace vgpu::worker {
namespace {

// Each thread writes, at its linear thread index, its block's coordinates
// and the grid's size as %ctaid and %nctaid give them, plus `salt`.
constexpr const char* BLOCKS = R"(.version 6.0
.target sm_70
.address_size 64

.visible .entry blocks(
	.param .u64 out,
	.param .u8 salt
)
.maxntid 64, 1, 1
{
	.reg .b32 %r<16>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	ld.param.u8 %r15, [salt];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ctaid.y;
	mov.u32 %r3, %ctaid.z;
	mov.u32 %r4, %nctaid.x;
	mov.u32 %r5, %nctaid.y;
	mov.u32 %r6, %nctaid.z;
	mad.lo.u32 %r7, %r3, %r5, %r2;
	mad.lo.u32 %r7, %r7, %r4, %r1;
	mov.u32 %r8, %tid.x;
	mov.u32 %r9, %ntid.x;
	mad.lo.u32 %r7, %r7, %r9, %r8;
	mul.lo.u32 %r10, %r4, %r5;
	mul.lo.u32 %r10, %r10, %r6;
	shl.b32 %r11, %r2, 8;
	shl.b32 %r12, %r3, 16;
	shl.b32 %r13, %r10, 24;
	add.u32 %r14, %r1, %r11;
	add.u32 %r14, %r14, %r12;
	add.u32 %r14, %r14, %r13;
	add.u32 %r14, %r14, %r15;
	mul.wide.u32 %rd2, %r7, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r14;
	ret;
}

.visible .entry noparams()
{
	.reg .b32 %r<2>;
	mov.u32 %r1, %ctaid.x;
	ret;
}
)";

class Memory : public ptx::GlobalMemory {
 public:
  static constexpr uint64_t BASE = 0x80'0000'0000ull;
  explicit Memory(size_t bytes) : mem(bytes) {}
  std::expected<std::byte*, ptx::MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
    if (va < BASE || va - BASE + bytes > mem.size()) return std::unexpected(ptx::MemoryFault{va, write, "not mapped"});
    return mem.data() + (va - BASE);
  }
  std::vector<std::byte> mem;
};

std::shared_ptr<const ptx::Module> parse(const std::string& text) {
  auto m = ptx::parse_module(text);
  EXPECT_TRUE(m) << m.error().message;
  return m ? *m : nullptr;
}

std::vector<std::byte> guest_params(uint8_t salt) {
  std::vector<std::byte> p(9);
  uint64_t out = Memory::BASE;
  memcpy(p.data(), &out, sizeof out);
  p[8] = std::byte{salt};
  return p;
}

// The original run whole, and the rewrite run in pieces of about
// `piece_blocks` blocks: the same bytes.
void expect_pieces_match(const uint32_t grid[3], uint64_t piece_blocks) {
  auto whole = parse(BLOCKS);
  RewrittenModule r = rewrite_ctaid(BLOCKS);
  ASSERT_TRUE(r.sliceable) << r.why_not;
  auto sliced = parse(r.text);
  ASSERT_TRUE(whole && sliced);
  uint64_t threads = uint64_t{grid[0]} * grid[1] * grid[2] * 64;
  Memory a(threads * 4), b(threads * 4);
  ptx::LaunchConfig l;
  l.grid = {grid[0], grid[1], grid[2]};
  l.block = {64, 1, 1};
  auto p = guest_params(7);
  l.params = p;
  auto blocks = uint64_t{grid[0]} * grid[1] * grid[2];
  ASSERT_TRUE(ptx::run_blocks(*whole, l, a, 0, blocks));
  auto pieces = grid_pieces(grid, piece_blocks);
  EXPECT_GE(pieces.size(), piece_blocks ? blocks / std::max<uint64_t>(piece_blocks, 1) / 4 : 1);
  for (const GridPiece& g : pieces) {
    std::vector<std::byte> q = guest_params(7);
    q.resize(slice_params_offset(9) + SLICE_PARAM_WORDS * 4);
    uint32_t words[6] = {g.offset[0], g.offset[1], g.offset[2], grid[0], grid[1], grid[2]};
    memcpy(q.data() + slice_params_offset(9), words, sizeof words);
    ptx::LaunchConfig lp = l;
    lp.grid = {g.grid[0], g.grid[1], g.grid[2]};
    lp.params = q;
    ASSERT_TRUE(ptx::run_blocks(*sliced, lp, b, 0, uint64_t{g.grid[0]} * g.grid[1] * g.grid[2]));
  }
  EXPECT_TRUE(a.mem == b.mem);
  uint32_t first;
  memcpy(&first, a.mem.data() + 64 * 4, 4);  // block (1,0,0)
  EXPECT_EQ(first, 1u + (blocks << 24) + 7u);
}

TEST(CtaidRewrite, PiecesOfA3dGridWriteWhatTheWholeGridWrites) {
  uint32_t grid[3] = {3, 4, 5};
  expect_pieces_match(grid, 12);
}

TEST(CtaidRewrite, PiecesOfA2dAndA1dGridWriteWhatTheWholeGridWrites) {
  uint32_t g2[3] = {5, 7, 1};
  expect_pieces_match(g2, 10);
  uint32_t g1[3] = {13, 1, 1};
  expect_pieces_match(g1, 4);
  expect_pieces_match(g1, 0);
}

TEST(CtaidRewrite, TheGuestsParametersKeepTheirOffsetsAndSixWordsFollow) {
  RewrittenModule r = rewrite_ctaid(BLOCKS);
  ASSERT_TRUE(r.sliceable);
  EXPECT_EQ(r.entries, (std::vector<std::string>{"blocks", "noparams"}));
  auto before = parse(BLOCKS);
  auto after = parse(r.text);
  ASSERT_TRUE(before && after);
  for (size_t e = 0; e < 2; e++) {
    const auto& b = before->entries()[e];
    const auto& a = after->entries()[e];
    ASSERT_EQ(a.params.size(), b.params.size() + SLICE_PARAM_WORDS);
    for (size_t i = 0; i < b.params.size(); i++) EXPECT_EQ(a.params[i].offset, b.params[i].offset);
    EXPECT_EQ(a.params[b.params.size()].offset, slice_params_offset(b.param_bytes));
    EXPECT_EQ(a.param_bytes, slice_params_offset(b.param_bytes) + SLICE_PARAM_WORDS * 4);
  }
}

// ptxas takes special registers only as mov's source (the interpreter
// takes them anywhere: the first GPU run failed every module on this).
TEST(CtaidRewrite, TheSpecialRegistersAreReadOnlyByMov) {
  RewrittenModule r = rewrite_ctaid(BLOCKS);
  ASSERT_TRUE(r.sliceable);
  size_t reads = 0;
  for (size_t at = 0, end; at < r.text.size(); at = end + 1) {
    end = r.text.find('\n', at);
    if (end == std::string::npos) end = r.text.size();
    std::string line = r.text.substr(at, end - at);
    if (line.find("%ctaid.") == std::string::npos && line.find("%nctaid.") == std::string::npos) continue;
    reads++;
    EXPECT_EQ(line.find_first_not_of(" \t"), line.find("mov.u32")) << line;
  }
  EXPECT_EQ(reads, 6u);  // the prologues' three reads of %ctaid, one per entry
}

TEST(CtaidRewrite, AFuncThatReadsCtaidLeavesTheModuleWhole) {
  std::string text = std::string(BLOCKS) +
                     ".func (.param .b32 r) which()\n{\n\t.reg .b32 %r<2>;\n"
                     "\tmov.u32 %r1, %ctaid.y;\n\tst.param.b32 [r], %r1;\n\tret;\n}\n";
  RewrittenModule r = rewrite_ctaid(text);
  EXPECT_FALSE(r.sliceable);
  EXPECT_EQ(r.text, text);
  EXPECT_EQ(r.why_not, "a .func reads %ctaid or %nctaid");
}

TEST(CtaidRewrite, AVectorReadOfCtaidLeavesTheModuleWhole) {
  std::string text = BLOCKS;
  text.replace(text.find("mov.u32 %r1, %ctaid.x;"), 22, "mov.v4.u32 {%r1, %r2, %r3, %r4}, %ctaid;");
  RewrittenModule r = rewrite_ctaid(text);
  EXPECT_FALSE(r.sliceable);
  EXPECT_EQ(r.why_not, "an .entry reads %ctaid or %nctaid as a vector");
}

TEST(CtaidRewrite, GridPiecesCoverEveryBlockOnce) {
  uint32_t grid[3] = {7, 3, 1};
  auto pieces = grid_pieces(grid, 5);  // slabs of 7 blocks along y: one row each
  ASSERT_EQ(pieces.size(), 3u);
  for (uint32_t i = 0; i < 3; i++) {
    EXPECT_EQ(pieces[i].offset[1], i);
    EXPECT_EQ(pieces[i].grid[0], 7u);
    EXPECT_EQ(pieces[i].grid[1], 1u);
  }
  uint32_t one[3] = {100, 1, 1};
  auto p = grid_pieces(one, 30);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[3].offset[0], 90u);
  EXPECT_EQ(p[3].grid[0], 10u);
}

}  // namespace
}  // namespace vgpu::worker
