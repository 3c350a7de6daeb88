// SPDX-License-Identifier: GPL-2.0-or-later
// Module variables placed at the guest's data segment, checked on the
// interpreter: the rewritten module (no variables left) writes what the
// original writes with its data segment at the same VA.
#include "worker/module_globals.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include "gpu/ptx/interpreter.h"

namespace vgpu::worker {
namespace {

constexpr const char* VARS = R"(.version 6.0
.target sm_70
.address_size 64

// .global and .const variables, and an address in a comment: g_table
.visible .global .align 4 .b8 g_table[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};
.global .align 4 .u32 g_count;
.visible .const .align 4 .b8 c_scale[8] = {5, 0, 0, 0, 7, 0, 0, 0};
.shared .align 4 .b8 s_tmp[16];

.visible .entry use_vars(.param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u64 %rd2, g_table;
	mul.wide.u32 %rd3, %r1, 4;
	add.u64 %rd4, %rd2, %rd3;
	ld.global.u32 %r2, [%rd4];
	ld.const.u32 %r3, [c_scale+4];
	mul.lo.u32 %r4, %r2, %r3;
	st.shared.u32 [s_tmp], %r4;
	ld.shared.u32 %r5, [s_tmp];
	cvta.global.u64 %rd5, g_count;
	atom.add.u32 %r6, [%rd5], 1;
	add.u64 %rd6, %rd1, %rd3;
	st.global.u32 [%rd6], %r5;
	st.global.u32 [g_table+12], %r6;
	ret;
}
)";

constexpr uint64_t BASE = 0x80'0000'0000ull, DATA = BASE + 0x1000;

class Memory : public ptx::GlobalMemory {
 public:
  std::expected<std::byte*, ptx::MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
    if (va < BASE || va - BASE + bytes > mem.size()) return std::unexpected(ptx::MemoryFault{va, write, "not mapped"});
    return mem.data() + (va - BASE);
  }
  std::vector<std::byte> mem = std::vector<std::byte>(0x2000);
};

TEST(ModuleGlobals, VariablesAtTheDataSegmentWriteWhatTheOriginalWrites) {
  auto orig = ptx::parse_module(VARS);
  ASSERT_TRUE(orig) << orig.error().message;
  std::string why;
  auto text = place_globals(VARS, **orig, DATA, why);
  ASSERT_TRUE(text) << why;
  auto placed = ptx::parse_module(*text);
  ASSERT_TRUE(placed) << placed.error().message << "\n" << *text;
  for (const auto& v : (*placed)->variables()) EXPECT_EQ(v.space, ptx::Space::shared) << v.name;
  EXPECT_EQ(text->find("ld.const"), std::string::npos);
  EXPECT_EQ(text->find("cvta.global.u64"), std::string::npos);
  // ptxas takes an immediate address for .local only (the H200 refused
  // nvcc's modules with [name+N] made [ADDRESS]): the data register.
  for (size_t at = text->find('['); at != std::string::npos; at = text->find('[', at + 1)) {
    const bool array_size = at > 0 &&
                            ((*text)[at - 1] == '_' || std::isalnum(static_cast<unsigned char>((*text)[at - 1])));
    if (!array_size) {
      EXPECT_FALSE(std::isdigit(static_cast<unsigned char>((*text)[at + 1]))) << text->substr(at, 24);
    }
  }
  EXPECT_NE(text->find("[%__vgpu_data+24]"), std::string::npos) << *text;  // c_scale (offset 20) + 4
  EXPECT_NE(text->find("[%__vgpu_data+12]"), std::string::npos) << *text;
  Memory a, b;
  auto init = (*orig)->initial_data();
  memcpy(a.mem.data() + (DATA - BASE), init.data(), init.size());
  b.mem = a.mem;
  uint64_t out = BASE;
  std::vector<std::byte> params(8);
  memcpy(params.data(), &out, 8);
  ptx::LaunchConfig l;
  l.block = {4, 1, 1};
  l.params = params;
  l.data_va = DATA;
  ASSERT_TRUE(ptx::run_blocks(**orig, l, a, 0, 1));
  l.data_va = 0;
  ASSERT_TRUE(ptx::run_blocks(**placed, l, b, 0, 1));
  EXPECT_TRUE(a.mem == b.mem);
  uint32_t first;
  memcpy(&first, a.mem.data(), 4);
  EXPECT_EQ(first, 28u);  // g_table[3] * c_scale[1]: lane 3 stored s_tmp last
}

TEST(ModuleGlobals, AModuleWithoutVariablesIsLeftAsItIs) {
  const char* text = ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry e()\n{\n\tret;\n}\n";
  auto m = ptx::parse_module(text);
  ASSERT_TRUE(m);
  std::string why;
  EXPECT_EQ(place_globals(text, **m, DATA, why), std::string(text));
}

}  // namespace
}  // namespace vgpu::worker
