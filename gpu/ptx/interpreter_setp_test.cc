// SPDX-License-Identifier: GPL-2.0-or-later
// Every comparison the fast path builds (exec_fast.h: setp of s32, u32,
// s64, u64 and f32, each with its codes) in each build of its kernels,
// against the executor table: equal operands, operands that differ only
// in a 64-bit lane's high word (a 32-bit compare must ignore it), signed
// and unsigned extremes, NaN, infinities and both zeros.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu/ptx/exec_fast.h"
#include "gpu/ptx/test_fast_builds.h"
#include "gpu/ptx/test_memory.h"
#include "ptx/module.h"

namespace vgpu::ptx::testing {
namespace {

constexpr uint32_t kThreads = 64;  // two full warps
constexpr uint32_t kRowBytes = kThreads * 4;

struct Compare {
  const char* type;
  const char* a;  // operand registers
  const char* b;
  std::vector<const char*> codes;
};

const std::vector<Compare>& compares() {
  static const std::vector<Compare> all = {
      {"s32", "%r2", "%r3", {"eq", "ne", "lt", "le", "gt", "ge"}},
      {"u32", "%r2", "%r3", {"eq", "ne", "lt", "le", "gt", "ge"}},
      {"s64", "%rd7", "%rd8", {"eq", "ne", "lt", "le", "gt", "ge"}},
      {"u64", "%rd7", "%rd8", {"eq", "ne", "lt", "le", "gt", "ge"}},
      {"f32",
       "%f1",
       "%f2",
       {"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}},
  };
  return all;
}

// Thread t compares a[t] with b[t] in every form; the k-th result (1 or 0) goes to out + k * kRowBytes + t * 4.
std::string compare_kernel() {
  std::string s = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry cmp(.param .u64 p_a, .param .u64 p_b, .param .u64 p_out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [p_a];
  ld.param.u64 %rd2, [p_b];
  ld.param.u64 %rd3, [p_out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 8;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  ld.global.u64 %rd7, [%rd5];
  ld.global.u64 %rd8, [%rd6];
  cvt.u32.u64 %r2, %rd7;
  cvt.u32.u64 %r3, %rd8;
  mov.b32 %f1, %r2;
  mov.b32 %f2, %r3;
  mul.wide.u32 %rd9, %r1, 4;
  add.s64 %rd10, %rd3, %rd9;
)";
  uint32_t k = 0;
  for (const Compare& c : compares())
    for (const char* code : c.codes) {
      s += std::string("  setp.") + code + "." + c.type + " %p1, " + c.a + ", " + c.b + ";\n";
      s += "  selp.u32 %r4, 1, 0, %p1;\n";
      s += "  st.global.u32 [%rd10+" + std::to_string(k++ * kRowBytes) + "], %r4;\n";
    }
  return s + "  ret;\n}\n";
}

uint32_t compare_count() {
  uint32_t n = 0;
  for (const Compare& c : compares()) n += static_cast<uint32_t>(c.codes.size());
  return n;
}

// a[t] and b[t]: equal (t % 4 == 0), the same low word under another high
// word (t % 4 == 1), or two of the special words and hashes under high
// words of both signs.
void operands(std::vector<uint64_t>& a, std::vector<uint64_t>& b) {
  const uint32_t special[] = {0x7fc00000u, 0xff800000u, 0x7f800000u, 0x80000000u, 0, 1, 0x7fffffffu, 0xffffffffu};
  for (uint32_t t = 0; t < kThreads; ++t) {
    const uint64_t hi = t % 3 == 0 ? 0 : t % 3 == 1 ? 0xffff'ffffull : 0x8000'0001ull;
    const uint32_t lo = t % 2 ? special[t / 2 % 8] : static_cast<uint32_t>(t * 2654435761u);
    a[t] = hi << 32 | lo;
    switch (t % 4) {
      case 0: b[t] = a[t]; break;
      case 1: b[t] = (a[t] ^ (uint64_t{0x5a5a} << 32)); break;
      default: b[t] = uint64_t{special[(t + 3) % 8]} | (hi ^ 0x8000'0000ull) << 32; break;
    }
  }
}

std::vector<std::byte> run_compares(const Module& m, bool fast) {
  FakeMemory mem(1 << 20);
  std::vector<uint64_t> a(kThreads), b(kThreads);
  operands(a, b);
  const uint64_t pa = mem.put(a), pb = mem.put(b);
  const uint64_t out = mem.put(std::vector<uint8_t>(compare_count() * kRowBytes, 0xab));
  Params p(m, "cmp");
  p.set(0, pa);
  p.set(1, pb);
  p.set(2, out);
  auto r = launch_on_path(fast, m, mem, "cmp", {1, 1, 1}, {kThreads, 1, 1}, p);
  EXPECT_TRUE(r) << r.error().message;
  return bytes_at(mem, out, compare_count() * kRowBytes);
}

// In each build of the fast path's kernels (test_fast_builds.h).
class PtxFastCompare : public FastBuildTest {};
INSTANTIATE_TEST_SUITE_P(Builds, PtxFastCompare, ::testing::ValuesIn(FAST_BUILDS), fast_build_name);

TEST_P(PtxFastCompare, EveryCodeOfEveryTypeMatchesTheExecutorTable) {
  auto m = parse_module(compare_kernel());
  ASSERT_TRUE(m) << m.error().message;
  const std::vector<std::byte> fast = run_compares(**m, true), table = run_compares(**m, false);
  ASSERT_EQ(fast.size(), table.size());
  uint32_t k = 0;
  for (const Compare& c : compares())
    for (const char* code : c.codes) {
      for (uint32_t t = 0; t < kThreads; ++t) {
        uint32_t f = 0, want = 0;
        std::memcpy(&f, fast.data() + k * kRowBytes + t * 4, 4);
        std::memcpy(&want, table.data() + k * kRowBytes + t * 4, 4);
        EXPECT_EQ(f, want) << "setp." << code << "." << c.type << ", thread " << t;
        EXPECT_LE(want, 1u) << "setp." << code << "." << c.type << ", thread " << t;
      }
      ++k;
    }
  // The table itself: equal operands compare equal (thread 0: both words hash values, not NaN).
  uint32_t eq_s32 = 0;
  std::memcpy(&eq_s32, table.data(), 4);
  EXPECT_EQ(eq_s32, 1u);
}

}  // namespace
}  // namespace vgpu::ptx::testing
