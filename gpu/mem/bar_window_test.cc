// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/bar_window.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "vgpu/formats.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = fmt::SMALL_PAGE;

class BarWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto v = Vram::create(1 * MiB);
    ASSERT_TRUE(v.has_value());
    vram = std::move(*v);
    auto w = BarWindow::create(*vram, 256 * KiB);
    ASSERT_TRUE(w.has_value());
    bar = std::move(*w);
  }

  uint32_t bar_word(uint64_t off) const {
    uint32_t v;
    std::memcpy(&v, bar->base() + off, sizeof v);
    return v;
  }

  std::unique_ptr<Vram> vram;
  std::unique_ptr<BarWindow> bar;
};

TEST_F(BarWindowTest, CreateRejectsUnalignedSize) {
  EXPECT_FALSE(BarWindow::create(*vram, PAGE + 8).has_value());
  EXPECT_FALSE(BarWindow::create(*vram, 0).has_value());
}

TEST_F(BarWindowTest, StartsWithNothingMapped) {
  EXPECT_EQ(bar->size(), 256 * KiB);
  EXPECT_FALSE(bar->mapped(0));
  EXPECT_TRUE(bar->span(0, 4).empty());
  // The reservation is there but inaccessible.
  EXPECT_EQ(msync(bar->base(), PAGE, MS_ASYNC), 0);
}

TEST_F(BarWindowTest, MappedPageShowsVramAtBarOffset) {
  vram->write32(5 * PAGE + 0x10, 0xcafe);
  ASSERT_TRUE(bar->map_page(2 * PAGE, 5 * PAGE, PAGE, false).has_value());
  EXPECT_TRUE(bar->mapped(2 * PAGE + 0x10));
  EXPECT_EQ(bar_word(2 * PAGE + 0x10), 0xcafeu);
}

TEST_F(BarWindowTest, WritesThroughBarReachVram) {
  ASSERT_TRUE(bar->map_page(0, 3 * PAGE, 2 * PAGE, false).has_value());
  auto s = bar->span(PAGE - 2, 4, true);
  ASSERT_EQ(s.size(), 4u);
  uint32_t v = 0x11223344;
  std::memcpy(s.data(), &v, sizeof v);
  EXPECT_EQ(vram->read32(4 * PAGE - 4) >> 16, 0x3344u);
  EXPECT_EQ(vram->read32(4 * PAGE) & 0xffff, 0x1122u);
}

TEST_F(BarWindowTest, SpanIsEmptyUnlessEveryPageMapped) {
  ASSERT_TRUE(bar->map_page(0, 0, PAGE, false).has_value());
  ASSERT_TRUE(bar->map_page(2 * PAGE, PAGE, PAGE, false).has_value());
  EXPECT_EQ(bar->span(0, PAGE).size(), PAGE);
  EXPECT_TRUE(bar->span(PAGE - 4, 8).empty());  // crosses into page 1
  EXPECT_TRUE(bar->span(0, 3 * PAGE).empty());
  EXPECT_TRUE(bar->span(bar->size() - 4, 8).empty());  // beyond the BAR
}

TEST_F(BarWindowTest, ReadOnlyPageGivesNoWritableSpan) {
  ASSERT_TRUE(bar->map_page(0, 0, PAGE, true).has_value());
  EXPECT_EQ(bar->span(0, 4).size(), 4u);
  EXPECT_TRUE(bar->span(0, 4, true).empty());
}

TEST_F(BarWindowTest, RemapReplacesThePage) {
  vram->write32(PAGE, 1);
  vram->write32(7 * PAGE, 7);
  ASSERT_TRUE(bar->map_page(0, PAGE, PAGE, false).has_value());
  EXPECT_EQ(bar_word(0), 1u);
  ASSERT_TRUE(bar->map_page(0, 7 * PAGE, PAGE, false).has_value());
  EXPECT_EQ(bar_word(0), 7u);
}

TEST_F(BarWindowTest, UnmapMakesPageInaccessible) {
  ASSERT_TRUE(bar->map_page(0, 0, 2 * PAGE, false).has_value());
  ASSERT_TRUE(bar->unmap_page(PAGE, PAGE).has_value());
  EXPECT_TRUE(bar->mapped(0));
  EXPECT_FALSE(bar->mapped(PAGE));
  EXPECT_TRUE(bar->span(PAGE, 4).empty());
  // Still reserved (not returned to the host), but PROT_NONE.
  EXPECT_EQ(msync(bar->base() + PAGE, PAGE, MS_ASYNC), 0);
}

TEST_F(BarWindowTest, ClearUnmapsEverything) {
  ASSERT_TRUE(bar->map_page(0, 0, 4 * PAGE, false).has_value());
  bar->clear();
  for (uint64_t p = 0; p < 4; ++p) EXPECT_FALSE(bar->mapped(p * PAGE));
  EXPECT_TRUE(bar->span(0, 4).empty());
}

TEST_F(BarWindowTest, MapRejectsBadArguments) {
  EXPECT_FALSE(bar->map_page(8, 0, PAGE, false).has_value());             // offset unaligned
  EXPECT_FALSE(bar->map_page(0, 8, PAGE, false).has_value());             // VRAM unaligned
  EXPECT_FALSE(bar->map_page(bar->size(), 0, PAGE, false).has_value());   // beyond the BAR
  EXPECT_FALSE(bar->map_page(0, vram->size(), PAGE, false).has_value());  // beyond VRAM
  EXPECT_FALSE(bar->map_page(0, 0, 0, false).has_value());
  EXPECT_FALSE(bar->unmap_page(bar->size() - PAGE, 2 * PAGE).has_value());
  EXPECT_FALSE(bar->mapped(0));
}

TEST_F(BarWindowTest, BigPageMapsAsOneRange) {
  const uint64_t big = fmt::BIG_PAGE;
  vram->write32(big + big - 4, 0xb16);
  ASSERT_TRUE(bar->map_page(big, big, big, false).has_value());
  EXPECT_EQ(bar->span(big, big).size(), big);
  EXPECT_EQ(bar_word(2 * big - 4), 0xb16u);
}

}  // namespace
}  // namespace vgpu::gpu
