// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/module_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace vgpu::gpu {
namespace {

std::string module_text(int n) {
  return ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k" + std::to_string(n) + "()\n{\n  ret;\n}\n";
}

TEST(ModuleCache, TheSameTextIsParsedOnce) {
  ModuleCache cache;
  auto a = cache.get(module_text(1));
  auto b = cache.get(module_text(1));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(ModuleCache, RefusedTextIsNotKept) {
  ModuleCache cache;
  EXPECT_FALSE(cache.get("not ptx at all"));
  EXPECT_FALSE(cache.get("not ptx at all"));
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST(ModuleCache, TheLeastRecentlyUsedGoesWhenTheBytesRunOut) {
  const uint64_t one = module_text(1).size();
  ModuleCache cache(2 * one + 1);  // room for two
  auto m1 = cache.get(module_text(1));
  ASSERT_TRUE(cache.get(module_text(2)));
  ASSERT_TRUE(cache.get(module_text(1)));  // 1 is now the most recent
  ASSERT_TRUE(cache.get(module_text(3)));  // evicts 2
  EXPECT_EQ(cache.stats().entries, 2u);
  EXPECT_LE(cache.stats().source_bytes, 2 * one + 1);
  const uint64_t misses = cache.stats().misses;
  auto again = cache.get(module_text(1));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get(), m1->get());  // still kept
  ASSERT_TRUE(cache.get(module_text(2)));
  EXPECT_EQ(cache.stats().misses, misses + 1);  // 2 was parsed again
}

TEST(ModuleCache, AModuleInUseOutlivesItsEviction) {
  ModuleCache cache(1);  // keeps nothing
  auto m = cache.get(module_text(4));
  ASSERT_TRUE(m);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ((*m)->entries().size(), 1u);
}

}  // namespace
}  // namespace vgpu::gpu
