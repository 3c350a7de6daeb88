// SPDX-License-Identifier: GPL-2.0-or-later
// The interpreter on hand-written PTX: arithmetic corner cases, rounding,
// faults, limits and the launch's control.
#include <gtest/gtest.h>

#include <cmath>

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

TEST(PtxExec, MulHiAndWide) {
  auto r = run(
      kernel("mov.u32 %r1, 7;\nmul.hi.u32 %r2, %r1, -1431655765;\nst.global.u32 [%rd0], %r2;\n"
             "mov.u32 %r3, -5;\nmul.wide.s32 %rd1, %r3, 1000000000;\nst.global.u64 [%rd0+8], %rd1;\n"
             "mul.hi.s64 %rd2, %rd1, %rd1;\nst.global.u64 [%rd0+16], %rd2;"));
  ASSERT_TRUE(r.exec) << r.exec.error().message;
  EXPECT_EQ(r.out[0] & 0xffffffff, (7ull * 0xAAAAAAABull) >> 32);
  EXPECT_EQ(static_cast<int64_t>(r.out[1]), -5000000000ll);
  EXPECT_EQ(r.out[2], static_cast<uint64_t>((static_cast<__int128>(-5000000000ll) * -5000000000ll) >> 64));
}

}  // namespace
}  // namespace vgpu::ptx::testing
