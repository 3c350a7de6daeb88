// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter on hand-written PTX: arithmetic corner cases, rounding,
// faults, limits and the launch's control.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <iterator>

#include "gpu/ptx/exec.h"
#include "gpu/ptx/test_memory.h"
#include "ptx/module.h"

namespace vgpu::ptx::testing {
namespace {

// A kernel `k(.param .u64 out)` with %rd0 = out (global), the body's
// registers: %r<32> .b32, %rd<32> .b64, %f<16> .f32, %fd<16> .f64, %p<8>.
std::string kernel(const std::string& body, const std::string& decls = "") {
  return ".version 7.0\n.target sm_70\n.address_size 64\n" + decls +
         "\n.visible .entry k(.param .u64 out)\n{\n.reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<32>;\n"
         ".reg .f32 %f<16>;\n.reg .f64 %fd<16>;\nld.param.u64 %rd0, [out];\n" +
         body + "\nret;\n}\n";
}

struct Result {
  std::expected<ExecStats, ExecError> exec;
  std::vector<uint64_t> out;
  // The low and high 32-bit words of out[i] (two stores of 4 bytes each).
  uint32_t lo(size_t i) const { return static_cast<uint32_t>(out[i]); }
  uint32_t hi(size_t i) const { return static_cast<uint32_t>(out[i] >> 32); }
};

Result run(const std::string& text, Dim3 block = {1, 1, 1}, size_t words = 32, const ExecLimits& limits = {},
           const ExecControl& control = {}, Dim3 grid = {1, 1, 1}) {
  auto m = parse_module(text);
  EXPECT_TRUE(m) << m.error().message;
  if (!m) return {std::unexpected(ExecError{ExecStatus::illegal, 0, false, 0, "parse"}), {}};
  FakeMemory mem(1 << 16);
  uint64_t out = mem.alloc(words * 8);
  Params p(**m, "k");
  p.set(0, out);
  auto r = launch(**m, mem, "k", grid, block, p, 0, limits, control);
  std::vector<uint64_t> v(mem.at<uint64_t>(out), mem.at<uint64_t>(out) + words);
  return {r, v};
}

// Whole, and as a resumable launch yielding every 2 warp instructions.
class PtxExec : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override { yield_every() = GetParam(); }
  void TearDown() override { yield_every() = 0; }
};

TEST_P(PtxExec, MulHiAndWide) {
  auto r = run(
      kernel("mov.u32 %r1, 7;\nmul.hi.u32 %r2, %r1, -1431655765;\nst.global.u32 [%rd0], %r2;\n"
             "mov.u32 %r3, -5;\nmul.wide.s32 %rd1, %r3, 1000000000;\nst.global.u64 [%rd0+8], %rd1;\n"
             "mul.hi.s64 %rd2, %rd1, %rd1;\nst.global.u64 [%rd0+16], %rd2;"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.out[0] & 0xffffffff, (7ull * 0xAAAAAAABull) >> 32);
  EXPECT_EQ(static_cast<int64_t>(r.out[1]), -5000000000ll);
  EXPECT_EQ(r.out[2], static_cast<uint64_t>((static_cast<__int128>(-5000000000ll) * -5000000000ll) >> 64));
}

TEST_P(PtxExec, CarryChains) {
  auto r = run(
      kernel("mov.b64 %rd1, -1;\nmov.b64 %rd2, 1;\nadd.cc.u32 %r1, -1, 1;\naddc.cc.u32 %r2, 5, 0;\n"
             "addc.u32 %r3, 0, 0;\nst.global.u32 [%rd0], %r1;\nst.global.u32 [%rd0+8], %r2;\n"
             "st.global.u32 [%rd0+16], %r3;\nsub.cc.u32 %r4, 0, 1;\nsubc.u32 %r5, 10, 0;\n"
             "st.global.u32 [%rd0+24], %r4;\nst.global.u32 [%rd0+32], %r5;\n"
             "mad.lo.cc.u32 %r6, -1, 2, 3;\nmadc.hi.u32 %r7, -1, 2, 0;\n"
             "st.global.u32 [%rd0+40], %r6;\nst.global.u32 [%rd0+48], %r7;"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.out[0] & 0xffffffff, 0u);
  EXPECT_EQ(r.out[1] & 0xffffffff, 6u);
  EXPECT_EQ(r.out[2] & 0xffffffff, 0u);
  EXPECT_EQ(r.out[3] & 0xffffffff, 0xffffffffu);
  EXPECT_EQ(r.out[4] & 0xffffffff, 9u);
  EXPECT_EQ(r.out[5] & 0xffffffff, 1u);  // 0x1_FFFF_FFFE + 3 = 0x2_0000_0001
  EXPECT_EQ(r.out[6] & 0xffffffff, 2u);  // hi(0x1_FFFF_FFFE) + carry
}

TEST_P(PtxExec, IntegerCornerCases) {
  auto r = run(
      kernel("div.s32 %r1, 7, 0;\nst.global.u32 [%rd0], %r1;\nmov.u32 %r2, -2147483648;\n"
             "div.s32 %r3, %r2, -1;\nst.global.u32 [%rd0+8], %r3;\nrem.s32 %r4, %r2, -1;\n"
             "st.global.u32 [%rd0+16], %r4;\nshl.b32 %r5, 1, 40;\nst.global.u32 [%rd0+24], %r5;\n"
             "shr.s32 %r6, %r2, 99;\nst.global.u32 [%rd0+32], %r6;\nbfe.u32 %r7, 0xabcd, 4, 8;\n"
             "st.global.u32 [%rd0+40], %r7;\nbfe.s32 %r8, 0xf0, 4, 4;\nst.global.u32 [%rd0+48], %r8;\n"
             "bfi.b32 %r9, 0xf, 0, 8, 4;\nst.global.u32 [%rd0+56], %r9;\n"
             "prmt.b32 %r10, 0x11223344, 0x55667788, 0x1054;\nst.global.u32 [%rd0+64], %r10;\n"
             "brev.b32 %r11, 1;\nst.global.u32 [%rd0+72], %r11;\nclz.b32 %r12, 256;\n"
             "st.global.u32 [%rd0+80], %r12;\npopc.b64 %r13, -1;\nst.global.u32 [%rd0+88], %r13;\n"
             "div.u64 %rd1, 9, 0;\nst.global.u64 [%rd0+96], %rd1;"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  // The 32-bit result of each store above, in order (one 8-byte slot each).
  constexpr uint32_t WANT[] = {0xffffffffu, 0x80000000u, 0u,          0u,          0xffffffffu, 0xbcu,
                               0xffffffffu, 0xf00u,      0x33447788u, 0x80000000u, 23u,         64u};
  for (size_t i = 0; i < std::size(WANT); ++i) EXPECT_EQ(r.lo(i), WANT[i]) << "slot " << i;
  EXPECT_EQ(r.out[12], ~0ull);
}

uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }
uint64_t f64_bits(double d) { return std::bit_cast<uint64_t>(d); }

TEST_P(PtxExec, CvtRoundingModes) {
  auto r = run(
      kernel("mov.f32 %f1, 0f40200000;\n"  // 2.5
             "cvt.rni.s32.f32 %r1, %f1;\ncvt.rzi.s32.f32 %r2, %f1;\ncvt.rmi.s32.f32 %r3, %f1;\n"
             "cvt.rpi.s32.f32 %r4, %f1;\nneg.f32 %f2, %f1;\ncvt.rni.s32.f32 %r5, %f2;\n"
             "cvt.rzi.u32.f32 %r6, %f2;\nmov.f32 %f3, 0f7F800000;\ncvt.rzi.s32.f32 %r7, %f3;\n"
             "mov.u64 %rd1, 16777217;\ncvt.rn.f32.u64 %f4, %rd1;\ncvt.rp.f32.u64 %f5, %rd1;\n"
             "mov.f64 %fd1, 0d3FF0000000000001;\ncvt.rn.f32.f64 %f6, %fd1;\ncvt.rp.f32.f64 %f7, %fd1;\n"
             "cvt.sat.u8.s32 %r8, 300;\ncvt.s64.s32 %rd2, -3;\ncvt.u16.u32 %r9, 0x12345;\n"
             "st.global.v4.u32 [%rd0], {%r1, %r2, %r3, %r4};\nst.global.v2.u32 [%rd0+16], {%r5, %r6};\n"
             "st.global.u32 [%rd0+24], %r7;\nst.global.v2.f32 [%rd0+32], {%f4, %f5};\n"
             "st.global.v2.f32 [%rd0+40], {%f6, %f7};\nst.global.u32 [%rd0+48], %r8;\n"
             "st.global.u64 [%rd0+56], %rd2;\nst.global.u32 [%rd0+64], %r9;"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.lo(0), 2u);
  EXPECT_EQ(r.hi(0), 2u);
  EXPECT_EQ(r.lo(1), 2u);
  EXPECT_EQ(r.hi(1), 3u);
  EXPECT_EQ(static_cast<int32_t>(r.lo(2)), -2);
  EXPECT_EQ(r.hi(2), 0u);  // saturated
  EXPECT_EQ(r.lo(3), 0x7fffffffu);
  EXPECT_EQ(r.lo(4), f32_bits(16777216.0f));
  EXPECT_EQ(r.hi(4), f32_bits(16777218.0f));
  EXPECT_EQ(r.lo(5), f32_bits(1.0f));
  EXPECT_EQ(r.hi(5), f32_bits(1.0f) + 1);
  EXPECT_EQ(r.lo(6), 255u);
  EXPECT_EQ(static_cast<int64_t>(r.out[7]), -3);
  EXPECT_EQ(r.lo(8), 0x2345u);
}

TEST_P(PtxExec, FloatRnExactnessAndModes) {
  auto r = run(kernel(
      "mov.f32 %f1, 0f3F800000;\nmov.f32 %f2, 0f40400000;\ndiv.rn.f32 %f3, %f1, %f2;\n"
      "div.rz.f32 %f4, %f1, %f2;\nsqrt.rn.f32 %f5, %f2;\nrcp.rn.f32 %f6, %f2;\n"
      "fma.rn.f32 %f7, %f3, %f2, 0fBF800000;\nadd.rp.f32 %f8, %f1, 0f33800000;\n"
      "mov.f64 %fd1, 0d4000000000000000;\nsqrt.rn.f64 %fd2, %fd1;\ndiv.rn.f64 %fd3, 0d3FF0000000000000, 0d4008000000000000;\n"
      "rcp.approx.ftz.f64 %fd4, %fd1;\nmul.ftz.f32 %f9, 0f00400000, 0f3F800000;\n"
      "add.sat.f32 %f10, %f2, 0f00000000;\nmin.f32 %f11, 0f7FC00000, %f2;\n"
      "st.global.v4.f32 [%rd0], {%f3, %f4, %f5, %f6};\nst.global.v4.f32 [%rd0+16], {%f7, %f8, %f9, %f10};\n"
      "st.global.f64 [%rd0+32], %fd2;\nst.global.f64 [%rd0+40], %fd3;\nst.global.f64 [%rd0+48], %fd4;\n"
      "st.global.f32 [%rd0+56], %f11;\nsetp.nan.f32 %p1, 0f7FC00000, %f1;\nselp.u32 %r1, 1, 0, %p1;\n"
      "setp.ltu.f32 %p2, 0f7FC00000, %f1;\nselp.u32 %r2, 1, 0, %p2;\nsetp.lt.f32 %p3, 0f7FC00000, %f1;\n"
      "selp.u32 %r3, 1, 0, %p3;\nst.global.v4.u32 [%rd0+64], {%r1, %r2, %r3, %r3};"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.lo(0), f32_bits(1.0f / 3.0f));
  EXPECT_EQ(r.hi(0), f32_bits(1.0f / 3.0f) - 1);  // nearest rounds 1/3 up, .rz down
  EXPECT_EQ(r.lo(1), f32_bits(std::sqrt(3.0f)));
  EXPECT_EQ(r.hi(1), f32_bits(1.0f / 3.0f));
  EXPECT_EQ(r.lo(2), f32_bits(std::fma(1.0f / 3.0f, 3.0f, -1.0f)));
  EXPECT_EQ(r.hi(2), f32_bits(1.0f) + 1);  // 1 + 2^-24 rounded up
  EXPECT_EQ(r.lo(3), 0u);                  // subnormal flushed
  EXPECT_EQ(r.hi(3), f32_bits(1.0f));      // saturated
  EXPECT_EQ(r.out[4], f64_bits(std::sqrt(2.0)));
  EXPECT_EQ(r.out[5], f64_bits(1.0 / 3.0));
  EXPECT_EQ(r.out[6], f64_bits(0.5));
  EXPECT_EQ(r.lo(7), f32_bits(3.0f));
  EXPECT_EQ(r.out[8], 1ull | 1ull << 32);
  EXPECT_EQ(r.out[9], 0u);
}

TEST_P(PtxExec, MisalignedAccess) {
  auto r = run(kernel("ld.global.u32 %r1, [%rd0+2];"));
  ASSERT_FALSE(r.exec);
  EXPECT_EQ(r.exec.error().status, ExecStatus::misaligned);
  EXPECT_EQ(r.exec.error().va, FakeMemory::kBase + 2);
}

TEST_P(PtxExec, OutOfBoundsSharedFaults) {
  auto r = run(kernel("mov.u64 %rd1, s;\nst.shared.u32 [%rd1+64], 1;", ".shared .align 4 .b8 s[64];"));
  ASSERT_FALSE(r.exec);
  EXPECT_EQ(r.exec.error().status, ExecStatus::mmu_fault);
  EXPECT_NE(r.exec.error().message.find("shared"), std::string::npos);
  auto g = run(
      kernel("mov.u64 %rd1, s;\ncvta.shared.u64 %rd2, %rd1;\nst.u32 [%rd2+4], 7;\nld.shared.u32 %r1, [s+4];\n"
             "st.global.u32 [%rd0], %r1;\nld.u32 %r2, [%rd2+4096];",
             ".shared .align 4 .b8 s[64];"));
  ASSERT_FALSE(g.exec);
  EXPECT_EQ(g.out[0] & 0xffffffff, 7u);  // the generic store reached shared memory
  EXPECT_EQ(g.exec.error().status, ExecStatus::mmu_fault);
  EXPECT_EQ(g.exec.error().va, 0xFFFF'0000'0000'1000ull);
}

TEST_P(PtxExec, TrapAndBrkpt) {
  auto r = run(kernel("setp.eq.u32 %p1, 1, 1;\n@%p1 trap;"));
  ASSERT_FALSE(r.exec);
  EXPECT_EQ(r.exec.error().status, ExecStatus::trap);
  EXPECT_EQ(r.exec.error().line, 14u);
  EXPECT_EQ(run(kernel("brkpt;")).exec.error().status, ExecStatus::trap);
  EXPECT_TRUE(run(kernel("setp.eq.u32 %p1, 1, 0;\n@%p1 trap;")).exec);
}

TEST_P(PtxExec, BarrierDeadlockIsIllegalNotAHang) {
  auto r = run(kernel("mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 32;\n@%p1 bra A;\nbar.sync 1;\nbra B;\nA:\n"
                      "bar.sync 0;\nB:\n"),
               {64, 1, 1});
  ASSERT_FALSE(r.exec);
  EXPECT_EQ(r.exec.error().status, ExecStatus::illegal);
}

TEST_P(PtxExec, ModuleConstantsAndGlobals) {
  auto r = run(
      kernel("ld.const.u32 %r1, [c+4];\nmov.u64 %rd1, g;\nld.global.u64 %rd2, [%rd1+8];\n"
             "st.global.u32 [%rd0], %r1;\nst.global.u64 [%rd0+8], %rd2;\natom.global.add.u64 %rd3, [g], 5;\n"
             "ld.global.u64 %rd4, [g];\nst.global.u64 [%rd0+16], %rd4;\n"
             "atom.global.cas.b32 %r2, [%rd0+24], 0, 9;\natom.global.inc.u32 %r3, [%rd0+32], 0;\n"
             "atom.global.max.s32 %r4, [%rd0+40], -4;\natom.global.add.f32 %f1, [%rd0+48], 0f3FC00000;",
             ".const .align 4 .u32 c[2] = {11, 22};\n.global .align 8 .u64 g[2] = {100, 200};"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.out[0] & 0xffffffff, 22u);
  EXPECT_EQ(r.out[1], 200u);
  EXPECT_EQ(r.out[2], 105u);
  EXPECT_EQ(r.out[3], 9u);
  EXPECT_EQ(r.out[4], 0u);
  EXPECT_EQ(r.out[5], 0u);
  EXPECT_EQ(static_cast<uint32_t>(r.out[6]), f32_bits(1.5f));
}

TEST_P(PtxExec, ShuffleModesAndVotes) {
  auto r = run(kernel("mov.u32 %r1, %laneid;\nshfl.sync.up.b32 %r2|%p1, %r1, 1, 0, -1;\n"
                      "shfl.sync.down.b32 %r3, %r1, 2, 31, -1;\nshfl.sync.idx.b32 %r4, %r1, 5, 31, -1;\n"
                      "setp.lt.u32 %p2, %r1, 40;\nvote.sync.all.pred %p3, %p2, -1;\nselp.u32 %r5, 1, 0, %p3;\n"
                      "vote.sync.any.pred %p4, !%p2, -1;\nselp.u32 %r6, 1, 0, %p4;\nactivemask.b32 %r7;\n"
                      "mul.wide.u32 %rd1, %r1, 4;\nadd.s64 %rd2, %rd0, %rd1;\nst.global.u32 [%rd2], %r2;\n"
                      "st.global.u32 [%rd2+128], %r3;\nst.global.u32 [%rd2+256], %r4;\n"
                      "setp.eq.u32 %p5, %r1, 0;\n@!%p5 bra END;\nst.global.v2.u32 [%rd0+384], {%r5, %r6};\n"
                      "st.global.u32 [%rd0+392], %r7;\nEND:"),
               {32, 1, 1}, 64);
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  auto word = [&](int i) { return static_cast<uint32_t>(r.out[i / 2] >> (i % 2 * 32)); };
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(word(static_cast<int>(l)), l == 0 ? 0 : l - 1) << l;
    EXPECT_EQ(word(32 + static_cast<int>(l)), l + 2 <= 31 ? l + 2 : l) << l;
    EXPECT_EQ(word(64 + static_cast<int>(l)), 5u) << l;
  }
  EXPECT_EQ(word(96), 1u);
  EXPECT_EQ(word(97), 0u);
  EXPECT_EQ(word(98), 0xffffffffu);
}

TEST_P(PtxExec, GenericLocalAndCalls) {
  std::string decls =
      ".func (.param .b32 r) twice(.param .b32 a)\n{\n.reg .b32 %x<2>;\n.local .align 4 .b8 d[8];\n"
      "ld.param.b32 %x0, [a];\nst.local.u32 [d+4], %x0;\nld.local.u32 %x1, [d+4];\nadd.s32 %x1, %x1, %x1;\n"
      "st.param.b32 [r], %x1;\nret;\n}\n";
  auto r = run(
      kernel("{\n.param .b32 p0;\n.param .b32 q0;\nst.param.b32 [p0], 21;\ncall.uni (q0), twice, (p0);\n"
             "ld.param.b32 %r1, [q0];\n}\nst.global.u32 [%rd0], %r1;",
             decls));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.out[0] & 0xffffffff, 42u);
}

// Every block sees zeroed shared memory: a block stores to it through a
// called .func (so writes_shared must follow calls), and the next reads 0.
TEST_P(PtxExec, SharedMemoryZeroedInEveryBlock) {
  std::string decls =
      ".shared .align 4 .b8 s[16];\n.func put(.param .b32 v)\n{\n.reg .b32 %y<1>;\nld.param.b32 %y0, [v];\n"
      "st.shared.u32 [s+4], %y0;\nret;\n}\n";
  auto r = run(kernel("mov.u32 %r1, %ctaid.x;\nld.shared.u32 %r2, [s+4];\nmul.wide.u32 %rd1, %r1, 4;\n"
                      "add.s64 %rd2, %rd0, %rd1;\nst.global.u32 [%rd2], %r2;\nadd.s32 %r3, %r1, 1;\n"
                      "{\n.param .b32 p0;\nst.param.b32 [p0], %r3;\ncall.uni put, (p0);\n}",
                      decls),
               {1, 1, 1}, 32, {}, {}, {4, 1, 1});
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  for (int b = 0; b < 4; ++b) EXPECT_EQ((r.out[b / 2] >> (32 * (b % 2))) & 0xffffffff, 0u) << "block " << b;
}

// A block's warps start at the entry, at depth 0, even where the warp's
// lanes of the last block exited inside a call (init_warp resets the lanes'
// places after a block that ran a control instruction). Block 0 exits in
// f; block 1's guarded call runs no lane, and its lanes must stay in the
// entry's frame: %r1 there is 1, in f's frame 0 (the store would go to
// out[0]).
TEST_P(PtxExec, ABlockStartsAtTheEntryAfterTheLastExitedInACall) {
  auto r = run(kernel("mov.u32 %r1, %ctaid.x;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 call f;\nadd.u32 %r3, %r1, 40;\n"
                      "mul.wide.u32 %rd1, %r1, 8;\nadd.s64 %rd2, %rd0, %rd1;\nst.global.u32 [%rd2], %r3;",
                      ".func f()\n{\nexit;\n}\n"),
               {32, 1, 1}, 32, {}, {}, {2, 1, 1});
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.out[0], 0u);
  EXPECT_EQ(r.out[1], 41u);
}

// A register written only from %ctaid in a called function holds each
// block's value: the callee's frame is kept from block to block, and the
// fast path's folded writer (FastProgram::block_consts) relies on
// begin_block writing the block's %ctaid into every frame. Block b stores
// b + 7 at out[b].
TEST_P(PtxExec, CtaidInACalleeFrameKeptAcrossBlocks) {
  std::string decls =
      ".func put(.param .b64 a)\n{\n.reg .b32 %c<2>;\n.reg .b64 %q<3>;\nld.param.b64 %q0, [a];\n"
      "mov.u32 %c0, %ctaid.x;\nadd.u32 %c1, %c0, 7;\nmul.wide.u32 %q1, %c0, 8;\nadd.s64 %q2, %q0, %q1;\n"
      "st.global.u32 [%q2], %c1;\nret;\n}\n";
  auto r = run(kernel("{\n.param .b64 p0;\nst.param.b64 [p0], %rd0;\ncall.uni put, (p0);\n}", decls), {32, 1, 1}, 32,
               {}, {}, {3, 1, 1});
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  for (uint32_t b = 0; b < 3; ++b) EXPECT_EQ(r.out[b], b + 7) << "block " << b;
}

// writes_shared (exec.h): st, atom and red to shared or a generic address,
// in the entry or a function it calls; loads and global stores do not count.
TEST(PtxWritesShared, StoresToSharedOrGenericInTheEntryOrItsCallees) {
  const auto writes = [](const std::string& body, const std::string& decls = "") {
    auto m = parse_module(kernel(body, ".shared .align 8 .b8 s[64];\n" + decls));
    EXPECT_TRUE(m) << m.error().message;
    if (!m) return false;
    const Program& prog = (*m)->program();
    return exec::writes_shared(prog, prog.entry_functions[0]);
  };
  EXPECT_FALSE(writes("ld.shared.u32 %r1, [s];\nst.global.u32 [%rd0], %r1;"));
  EXPECT_TRUE(writes("st.shared.u32 [s], 1;"));
  EXPECT_TRUE(writes("st.u32 [%rd0], 1;"));  // generic: may be the shared window
  EXPECT_TRUE(writes("atom.shared.add.u32 %r1, [s], 1;"));
  EXPECT_TRUE(writes("red.shared.add.u32 [s], 1;"));
  EXPECT_TRUE(writes("call.uni f;", ".func f()\n{\nst.shared.u32 [s], 1;\nret;\n}\n"));
  EXPECT_FALSE(writes("call.uni f;", ".func f()\n{\nst.global.u32 [0], 1;\nret;\n}\n"));
}

INSTANTIATE_TEST_SUITE_P(Runs, PtxExec, ::testing::Values(0, 2),
                         [](const auto& p) { return p.param ? "yield_every_" + std::to_string(p.param) : "whole"; });

}  // namespace
}  // namespace vgpu::ptx::testing
