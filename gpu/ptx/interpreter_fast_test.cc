// SPDX-License-Identifier: GPL-2.0-or-later
// The warp fast path (exec_fast.h, docs/ptx.md "Fast path") against the
// executor table: every kernel run both ways must leave the same memory
// and counters byte for byte, or fail with the same error. The edge
// kernels below (hand-written PTX) give each fast form values where a
// width, a sign or a NaN matters, and loads and stores the fast path must
// decline (misaligned, a page boundary, out of range, a generic address
// in the shared window).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "gpu/ptx/exec_fast.h"
#include "gpu/ptx/test_fast_builds.h"
#include "gpu/ptx/test_kernels.h"
#include "gpu/ptx/test_memory.h"
#include "ptx/module.h"
#include "vgpu/bits.h"

namespace vgpu::ptx::testing {
namespace {

constexpr const char* kEdge = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry edge(.param .u64 p_in, .param .u64 p_out, .param .u32 p_off)
{
  .reg .pred %p<10>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<40>;
  .reg .f32 %f<8>;
  .shared .align 8 .b8 sh[512];
  ld.param.u64 %rd1, [p_in];
  ld.param.u64 %rd2, [p_out];
  ld.param.u32 %r20, [p_off];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.s32 %r2, [%rd4];
  ld.global.u32 %r3, [%rd4+128];
  ld.global.s32 %rd5, [%rd4];
  mov.b32 %f1, %r2;
  mov.b32 %f2, %r3;
  sub.s32 %r4, %r2, %r3;
  mul.lo.s32 %r5, %r2, %r3;
  mul.wide.s32 %rd6, %r2, %r3;
  mul.wide.u32 %rd7, %r2, %r3;
  mad.lo.s32 %r6, %r2, %r3, %r4;
  shr.s32 %r7, %r2, 3;
  shr.u32 %r8, %r2, 31;
  shr.s64 %rd8, %rd5, 40;
  shl.b32 %r9, %r2, 7;
  xor.b32 %r10, %r2, -1;
  or.b64 %rd9, %rd6, 255;
  cvt.s64.s32 %rd10, %r5;
  cvt.u16.u32 %r11, %r2;
  cvt.u32.u64 %r12, %rd6;
  setp.lt.s32 %p1, %r2, %r3;
  setp.lt.u32 %p2, %r2, %r3;
  setp.ge.s64 %p3|%p4, %rd5, %rd6;
  setp.neu.f32 %p5, %f1, %f2;
  setp.ltu.f32 %p6, %f1, %f2;
  setp.gt.f32 %p7, %f1, %f2;
  selp.b32 %r13, %r2, %r3, %p1;
  selp.b32 %r14, %r2, %r3, !%p6;
  add.f32 %f3, %f1, %f2;
  mul.f32 %f4, %f1, %f2;
  fma.rn.f32 %f5, %f1, %f2, %f3;
  sub.f32 %f6, %f3, %f4;
  selp.u32 %r15, 1, 0, %p2;
  selp.u32 %r16, 1, 0, %p3;
  selp.u32 %r17, 1, 0, %p4;
  selp.u32 %r18, 1, 0, %p5;
  selp.u32 %r19, 1, 0, %p7;
  mul.wide.u32 %rd11, %r1, 128;
  add.s64 %rd12, %rd2, %rd11;
  st.global.u32 [%rd12], %r4;
  st.global.u32 [%rd12+4], %r5;
  st.global.u64 [%rd12+8], %rd6;
  st.global.u64 [%rd12+16], %rd7;
  st.global.u32 [%rd12+24], %r6;
  st.global.u32 [%rd12+28], %r7;
  st.global.u32 [%rd12+32], %r8;
  st.global.u64 [%rd12+40], %rd8;
  st.global.u32 [%rd12+48], %r9;
  st.global.u32 [%rd12+52], %r10;
  st.global.u64 [%rd12+56], %rd9;
  st.global.u64 [%rd12+64], %rd10;
  st.global.u32 [%rd12+72], %r11;
  st.global.u32 [%rd12+76], %r12;
  st.global.u32 [%rd12+80], %r13;
  st.global.u32 [%rd12+84], %r14;
  st.global.f32 [%rd12+88], %f5;
  st.global.f32 [%rd12+92], %f6;
  st.global.u32 [%rd12+96], %r15;
  st.global.u32 [%rd12+100], %r16;
  st.global.u32 [%rd12+104], %r17;
  st.global.u32 [%rd12+108], %r18;
  st.global.u32 [%rd12+112], %r19;
  // shared: a broadcast, a stride, and a generic address in the shared window
  mul.wide.u32 %rd13, %r1, 8;
  mov.u64 %rd14, sh;
  add.s64 %rd15, %rd14, %rd13;
  st.shared.u64 [%rd15], %rd6;
  bar.sync 0;
  and.b32 %r21, %r1, 3;
  mul.wide.u32 %rd16, %r21, 8;
  add.s64 %rd17, %rd14, %rd16;
  ld.shared.u64 %rd18, [%rd17];
  cvta.shared.u64 %rd19, %rd15;
  ld.u64 %rd20, [%rd19];
  add.s64 %rd21, %rd18, %rd20;
  st.global.u64 [%rd12+120], %rd21;
  // an offset from the parameters: misaligned or on two pages for some values
  cvt.u64.u32 %rd22, %r20;
  add.s64 %rd23, %rd4, %rd22;
  ld.global.u32 %r22, [%rd23];
  st.global.u32 [%rd12+116], %r22;
  // gathers: the lanes in another order (tid ^ 5), signed and unsigned, global and shared
  xor.b32 %r23, %r1, 5;
  mul.wide.u32 %rd24, %r23, 4;
  add.s64 %rd25, %rd1, %rd24;
  ld.global.s32 %rd26, [%rd25];
  ld.global.u32 %rd27, [%rd25+4];
  ld.global.s32 %r24, [%rd25+8];
  mul.wide.u32 %rd28, %r23, 8;
  add.s64 %rd29, %rd1, %rd28;
  ld.global.u64 %rd30, [%rd29];
  add.s64 %rd31, %rd14, %rd24;
  ld.shared.s32 %rd32, [%rd31];
  ld.shared.u32 %r25, [%rd31+4];
  st.global.u64 [%rd12+8192], %rd26;
  st.global.u64 [%rd12+8200], %rd27;
  st.global.u32 [%rd12+8208], %r24;
  st.global.u64 [%rd12+8216], %rd30;
  st.global.u64 [%rd12+8224], %rd32;
  st.global.u32 [%rd12+8232], %r25;
  // consecutive 32-bit stores: a 32-bit register, and the low words of a sign-extended 64-bit one
  add.s64 %rd35, %rd2, %rd3;
  st.global.u32 [%rd35+16384], %r2;
  st.global.u32 [%rd35+16512], %rd5;
  // a consecutive shared run below the offset: below address 0 (wrapping) for some offsets, a fault
  sub.s64 %rd33, %rd15, %rd22;
  ld.shared.u64 %rd34, [%rd33];
  st.global.u64 [%rd12+8240], %rd34;
  // u32 <= and >= (the AVX2 build's unsigned minimum and maximum), equal operands included (%r13 is %r2 or %r3)
  setp.le.u32 %p8, %r2, %r3;
  setp.ge.u32 %p9, %r3, %r13;
  selp.u32 %r26, 1, 0, %p8;
  selp.u32 %r27, 1, 0, %p9;
  st.global.u32 [%rd12+8248], %r26;
  st.global.u32 [%rd12+8252], %r27;
  ret;
}
)";

const Module& edge() {
  static const auto m = [] {
    auto r = parse_module(kEdge);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return std::move(*r);
  }();
  return *m;
}

struct Outcome {
  std::expected<ExecStats, ExecError> exec;
  std::vector<std::byte> memory;
};

// Inputs with a NaN, infinities, negatives and the extremes; `off` moves
// one load. One NaN payload only: which operand's payload a NaN result
// carries is the host compiler's choice of operand order (docs/ptx.md).
Outcome run_edge(bool fast, uint32_t off, uint32_t threads) {
  FakeMemory mem(1 << 20);
  std::vector<uint32_t> in(4096);
  const uint32_t special[] = {0x7fc00000u, 0xbfffffffu, 0x80000000u, 0x3fffffffu, 0, 1, 0x7f800000u, 0xff800000u};
  for (size_t i = 0; i < in.size(); ++i)  // bit 30 clear: no other NaN
    in[i] = i % 5 == 0 ? special[i / 5 % 8] : static_cast<uint32_t>(i * 2654435761u) & 0xbfffffffu;
  const uint64_t src = mem.put(in);
  const uint64_t dst = mem.put(std::vector<uint8_t>(64 * 1024, 0xab));
  Params p(edge(), "edge");
  p.set(0, src);
  p.set(1, dst);
  p.set(2, off);
  auto r = launch_on_path(fast, edge(), mem, "edge", {1, 1, 1}, {threads, 1, 1}, p);
  return Outcome{r, bytes_at(mem, dst, 64 * 1024)};
}

void expect_same(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.exec.has_value(), b.exec.has_value());
  if (!a.exec) {
    EXPECT_EQ(a.exec.error().status, b.exec.error().status);
    EXPECT_EQ(a.exec.error().message, b.exec.error().message);
    EXPECT_EQ(a.exec.error().va, b.exec.error().va);
    EXPECT_EQ(a.exec.error().line, b.exec.error().line);
    return;
  }
  EXPECT_EQ(a.exec->warp_instructions, b.exec->warp_instructions);
  EXPECT_EQ(a.exec->thread_instructions, b.exec->thread_instructions);
  size_t first = 0;
  while (first < a.memory.size() && a.memory[first] == b.memory[first]) ++first;
  EXPECT_EQ(first, a.memory.size()) << "memory differs first at byte " << first;
}

// In each build of the fast path's kernels (test_fast_builds.h).
class PtxFastBuild : public FastBuildTest {};
INSTANTIATE_TEST_SUITE_P(Builds, PtxFastBuild, ::testing::ValuesIn(FAST_BUILDS), fast_build_name);

TEST_P(PtxFastBuild, EdgeValuesMatchTheExecutorTable) {
  // 0: aligned; 2: misaligned (an error); 4096 - 64: the warp on two pages;
  // 1 << 20: out of range (an MMU fault); 64: the shared run below address 0 (an MMU fault).
  // 64 threads: two full warps; 40: a partial one.
  for (uint32_t threads : {64u, 40u})
    for (uint32_t off : {0u, 2u, 64u, 4096u - 64u, 1u << 20}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, offset " + std::to_string(off));
      const Outcome fast = run_edge(true, off, threads), table = run_edge(false, off, threads);
      expect_same(fast, table);
      if (off == 0) {
        EXPECT_TRUE(fast.exec) << fast.exec.error().message;
      }
      if (off == 2 || off == 64) {
        EXPECT_FALSE(fast.exec);
      }
    }
}

// The interpreter tests' kernels (test_kernels.h) with generated inputs, both ways.
TEST_P(PtxFastBuild, TestKernelsMatchTheExecutorTable) {
  struct Case {
    const char* entry;
    Dim3 grid, block;
    uint32_t dyn_shared = 0;
  };
  const Case cases[] = {
      {"_Z4vaddPKfS0_Pfi", {2, 1, 1}, {128, 1, 1}},
      {"_Z5saxpyifPKfPf", {2, 1, 1}, {128, 1, 1}},
      {"_Z6matmulPKfS0_Pfi", {2, 2, 1}, {16, 16, 1}},
      {"_Z6reducePKfPfi", {2, 1, 1}, {256, 1, 1}},
      {"_Z7warpsumPKjPjS1_", {2, 1, 1}, {64, 1, 1}},
      {"_Z9histogramPKhPii", {3, 1, 1}, {128, 1, 1}},
      {"_Z7divergePi", {1, 1, 1}, {96, 1, 1}},
      {"_Z8localarrPKiPi", {1, 1, 1}, {64, 1, 1}},
      {"_Z9dynsharedPf", {1, 1, 1}, {128, 1, 1}, 128 * 4},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.entry);
    Outcome out[2];
    for (bool fast : {true, false}) {
      FakeMemory mem((1 << 20) + 4096);
      std::vector<uint32_t> words(1 << 17);
      for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u % 31);
      const uint64_t base = mem.put(words);
      Params p(kernels(), k.entry);
      const EntryInfo& e = kernels().entries()[static_cast<size_t>(kernels().find_entry(k.entry))];
      for (size_t i = 0; i < e.params.size(); ++i) {
        if (e.params[i].size == 8) p.set(i, base + i * 64 * KiB);
        if (e.params[i].size == 4) p.set(i, uint32_t{200});
      }
      auto r = launch_on_path(fast, kernels(), mem, k.entry, k.grid, k.block, p, k.dyn_shared);
      out[fast] = Outcome{r, bytes_at(mem, base, words.size() * 4)};
    }
    ASSERT_TRUE(out[1].exec) << out[1].exec.error().message;
    expect_same(out[1], out[0]);
  }
}

// Guarded branches, plain and negated (@!%p), that every lane of a warp
// takes, that none takes, and that split it: a chain follows a uniform one
// itself and leaves a split one to the dispatch loop. Thread t ends with
// 1 when t < k, else 110.
constexpr const char* kBranches = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry branches(.param .u64 p_out, .param .u32 p_k)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p_out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u32 %r1, [p_k];
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  mov.u32 %r3, 0;
  setp.lt.u32 %p1, %r2, %r1;
  @!%p1 bra A;
  add.s32 %r3, %r3, 1;
A:
  @%p1 bra B;
  add.s32 %r3, %r3, 10;
B:
  setp.ge.u32 %p2, %r2, %r1;
  @!%p2 bra C;
  add.s32 %r3, %r3, 100;
C:
  st.global.u32 [%rd4], %r3;
  ret;
}
)";

TEST_P(PtxFastBuild, UniformAndSplitBranchesPlainAndNegated) {
  auto m = parse_module(kBranches);
  ASSERT_TRUE(m) << m.error().message;
  // Two warps: k = 0 none of either takes @%p1, 64 all do, 32 the first warp only, 40 splits the second.
  for (uint32_t k : {0u, 32u, 40u, 64u}) {
    SCOPED_TRACE("k " + std::to_string(k));
    Outcome out[2];
    for (bool fast : {true, false}) {
      FakeMemory mem(1 << 16);
      const uint64_t dst = mem.put(std::vector<uint32_t>(64, 0xabab));
      Params p(**m, "branches");
      p.set(0, dst);
      p.set(1, k);
      auto r = launch_on_path(fast, **m, mem, "branches", {1, 1, 1}, {64, 1, 1}, p);
      out[fast] = Outcome{r, bytes_at(mem, dst, 64 * 4)};
    }
    ASSERT_TRUE(out[1].exec) << out[1].exec.error().message;
    expect_same(out[1], out[0]);
    for (uint32_t t = 0; t < 64; ++t) {
      uint32_t v;
      std::memcpy(&v, out[1].memory.data() + 4 * t, 4);
      EXPECT_EQ(v, t < k ? 1u : 110u) << "thread " << t;
    }
  }
}

// A register whose only writer gives one value for the launch (a
// parameter, a cvta of one) or reads %tid starts with it in every frame and
// its writer is a nop; so does one written only from %ctaid, with the
// block's value written again per block; a register with two writers (a
// loop counter) stays with its kernel. Two blocks of two warps: the frames
// are kept from block to block, so a register not rewritten would carry
// the last block's value.
constexpr const char* kConst = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry konst(.param .u64 p_out, .param .u32 p_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p_out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u32 %r1, [p_n];
  mov.u32 %r2, 0;
LOOP:
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.s32 %r7, %r2, %r6;
  st.global.u32 [%rd4], %r7;
  ret;
}
)";

TEST(PtxFastConst, OnlyWritersOfALaunchConstantBecomeNops) {
  auto m = parse_module(kConst);
  ASSERT_TRUE(m) << m.error().message;
  FakeMemory mem(1 << 16);
  const uint64_t out = mem.put(std::vector<uint32_t>(128, 0));
  constexpr uint32_t kN = 5;
  Params p(**m, "konst");
  p.set(0, out);
  p.set(1, kN);
  LaunchConfig cfg;
  cfg.grid = {2, 1, 1};
  cfg.block = {64, 1, 1};
  cfg.params = p.bytes();
  const exec::FastProgram fp = exec::build_fast((*m)->program(), cfg);
  // ld.param, cvta, ld.param, then mov.u32 %r2, 0 (two writers) and the per-lane ops.
  using K = exec::FastKind;
  ASSERT_GE(fp.ops.size(), 11u);
  EXPECT_EQ(fp.ops[0].kind, K::nop);
  EXPECT_EQ(fp.ops[1].kind, K::nop);
  EXPECT_EQ(fp.ops[2].kind, K::nop);
  EXPECT_EQ(fp.ops[0].imm, 3u);  // the nops in a row from there
  EXPECT_NE(fp.ops[3].kind, K::nop);
  EXPECT_EQ(fp.ops[7].kind, K::nop);  // %ctaid.x: the block's, written in every frame per block
  EXPECT_EQ(fp.ops[8].kind, K::nop);  // %ntid.x
  EXPECT_EQ(fp.ops[9].kind, K::nop);  // %tid.x: the warp's own in every block
  EXPECT_NE(fp.ops[10].kind, K::nop);
  std::vector<uint64_t> values;
  uint32_t tids = 0, ctaids = 0;
  for (const exec::ConstReg& k : fp.consts) {
    if (k.tid_dim != exec::ConstReg::kNoTid)
      ++tids;
    else if (k.ctaid_dim != exec::ConstReg::kNoTid)
      ++ctaids;
    else
      values.push_back(k.value);
  }
  EXPECT_EQ(tids, 1u);
  EXPECT_EQ(ctaids, 1u);
  EXPECT_EQ(fp.block_consts.size(), 1u);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, (std::vector<uint64_t>{kN, 64, out, out}));
  Outcome o[2];
  for (bool fast : {true, false}) {
    std::memset(mem.at<std::byte>(out), 0, 128 * 4);
    auto r = launch_on_path(fast, **m, mem, "konst", {2, 1, 1}, {64, 1, 1}, p);
    o[fast] = Outcome{r, bytes_at(mem, out, 128 * 4)};
    ASSERT_TRUE(r) << r.error().message;
    for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(mem.at<uint32_t>(out)[i], kN + i) << i;
  }
  expect_same(o[1], o[0]);
}

// Writers in reverse order (r1 = r2, r2 = r3, ..., r64 = 5) would take a
// folding pass each: build_fast stops after a few passes (hostile PTX could
// chain a million), and the registers it leaves run as before. Each mov
// reads its source before that is written (PTX leaves the value undefined):
// both paths read the frame's initial value alike.
TEST(PtxFastConst, FoldingAReverseChainIsBounded) {
  constexpr uint32_t kChain = 64;
  std::string text =
      ".version 7.0\n.target sm_70\n.address_size 64\n"
      ".visible .entry rev(.param .u64 p_out)\n{\n  .reg .b64 %rd<" +
      std::to_string(kChain + 3) + ">;\n  .reg .b32 %r<2>;\n";
  for (uint32_t i = 1; i < kChain; ++i)
    text += "  mov.b64 %rd" + std::to_string(i) + ", %rd" + std::to_string(i + 1) + ";\n";
  text += "  mov.b64 %rd" + std::to_string(kChain) + ", 5;\n";
  text += "  ld.param.u64 %rd" + std::to_string(kChain + 1) + ", [p_out];\n  mov.u32 %r1, %tid.x;\n";
  text += "  mul.wide.u32 %rd" + std::to_string(kChain + 2) + ", %r1, 8;\n";
  text += "  add.s64 %rd" + std::to_string(kChain + 1) + ", %rd" + std::to_string(kChain + 1) + ", %rd" +
          std::to_string(kChain + 2) + ";\n";
  text += "  st.global.u64 [%rd" + std::to_string(kChain + 1) + "], %rd1;\n  ret;\n}\n";
  auto m = parse_module(text);
  ASSERT_TRUE(m) << m.error().message;
  FakeMemory mem(1 << 16);
  const uint64_t out = mem.put(std::vector<uint64_t>(32, 0));
  Params p(**m, "rev");
  p.set(0, out);
  LaunchConfig cfg;
  cfg.grid = {1, 1, 1};
  cfg.block = {32, 1, 1};
  cfg.params = p.bytes();
  const exec::FastProgram fp = exec::build_fast((*m)->program(), cfg);
  EXPECT_GT(fp.consts.size(), 0u);
  EXPECT_LT(fp.consts.size(), size_t{kChain / 2});
  Outcome o[2];
  for (bool fast : {true, false}) {
    std::memset(mem.at<std::byte>(out), 0xab, 32 * 8);
    auto r = launch_on_path(fast, **m, mem, "rev", {1, 1, 1}, {32, 1, 1}, p);
    ASSERT_TRUE(r) << r.error().message;
    o[fast] = Outcome{r, bytes_at(mem, out, 32 * 8)};
    EXPECT_NE(mem.at<uint64_t>(out)[31], 0xababababababababull);  // every lane stored
  }
  expect_same(o[1], o[0]);
}

// A warp's first chain runs at the start of its turn (interpreter.cc,
// first_chain): it counts towards the turn (4096 warp instructions before
// the next warp's) and towards the next poll, as the dispatch loop counts.
// The tickets that every lane takes in a loop longer than a turn record
// the order in which the warps' turns ran; the polls are counted. Both must
// be the executor table's.
constexpr const char* kTurns = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry turns(.param .u64 p_out, .param .u64 p_ctr)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p_out];
  ld.param.u64 %rd2, [p_ctr];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  xor.b32 %r2, %r1, 3;
  add.s32 %r3, %r2, 1;
  mov.u32 %r5, 0;
L:
  atom.global.add.u32 %r4, [%rd2], 1;
  add.s32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, 1500;
  @%p1 bra L;
  add.s32 %r6, %r4, %r3;
  st.global.u32 [%rd4], %r6;
  ret;
}
)";

TEST(PtxFastTurns, AFirstChainCountsTowardsTheTurnAndThePoll) {
  auto m = parse_module(kTurns);
  ASSERT_TRUE(m) << m.error().message;
  constexpr uint32_t kThreads = 96;
  std::vector<uint32_t> tickets[2];
  uint64_t polls[2] = {};
  for (bool fast : {true, false}) {
    FakeMemory mem(1 << 16);
    const uint64_t out = mem.put(std::vector<uint32_t>(kThreads, 0)), ctr = mem.put(std::vector<uint32_t>(1, 0));
    Params p(**m, "turns");
    p.set(0, out).set(1, ctr);
    ExecControl control;
    control.poll_every = 7;
    control.keep_going = [&polls, fast] { return ++polls[fast] > 0; };
    auto r = launch_on_path(fast, **m, mem, "turns", {2, 1, 1}, {kThreads, 1, 1}, p, 0, control);
    ASSERT_TRUE(r) << r.error().message;
    tickets[fast].assign(mem.at<uint32_t>(out), mem.at<uint32_t>(out) + kThreads);
  }
  EXPECT_EQ(tickets[1], tickets[0]);
  EXPECT_EQ(polls[1], polls[0]);
  EXPECT_GT(polls[1], 1000u);
  // The turns interleave: block 1's warp 1 takes its last ticket after block 0's 3 x 1500 and after warp 2 of
  // block 1 took some (its first turn ran before warp 1's second), so past 2 x 1500 of block 1's.
  EXPECT_GT(tickets[1][32], (3 + 2) * 1500u * 32);
}

}  // namespace
}  // namespace vgpu::ptx::testing
