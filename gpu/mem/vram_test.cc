// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/mem/vram.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "vgpu/bits.h"
#include "vgpu/formats.h"

namespace vgpu::gpu {
namespace {

std::unique_ptr<Vram> make_vram(uint64_t bytes = 1 * MiB) {
  auto v = Vram::create(bytes);
  EXPECT_TRUE(v.has_value());
  return v ? std::move(*v) : nullptr;
}

TEST(Vram, CreateRejectsZeroSize) {
  auto v = Vram::create(0);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, Errc::invalid_argument);
}

TEST(Vram, CreateRejectsSizeNotPageMultiple) { EXPECT_FALSE(Vram::create(4 * KiB + 1).has_value()); }

TEST(Vram, StartsZeroed) {
  auto v = make_vram();
  EXPECT_EQ(v->size(), 1 * MiB);
  EXPECT_EQ(v->read64(0), 0u);
  EXPECT_EQ(v->read64(v->size() - 8), 0u);
}

TEST(Vram, Word32RoundTrips) {
  auto v = make_vram();
  EXPECT_TRUE(v->write32(0x100, 0xdeadbeef));
  EXPECT_EQ(v->read32(0x100), 0xdeadbeefu);
}

TEST(Vram, Word64RoundTripsLittleEndian) {
  auto v = make_vram();
  EXPECT_TRUE(v->write64(0x200, 0x1122334455667788ull));
  EXPECT_EQ(v->read64(0x200), 0x1122334455667788ull);
  EXPECT_EQ(v->read32(0x200), 0x55667788u);
  EXPECT_EQ(v->read32(0x204), 0x11223344u);
}

TEST(Vram, MisalignedAccessReadsOnesAndDropsWrites) {
  auto v = make_vram();
  EXPECT_EQ(v->read32(2), ~uint32_t{0});
  EXPECT_EQ(v->read64(4), ~uint64_t{0});
  EXPECT_FALSE(v->write32(1, 7));
  EXPECT_FALSE(v->write64(4, 7));
  EXPECT_EQ(v->read64(0), 0u);
  EXPECT_EQ(v->read64(8), 0u);
}

TEST(Vram, OutOfRangeAccessReadsOnesAndDropsWrites) {
  auto v = make_vram();
  EXPECT_EQ(v->read32(v->size()), ~uint32_t{0});
  EXPECT_EQ(v->read64(v->size() - 4), ~uint64_t{0});
  EXPECT_FALSE(v->write32(v->size(), 1));
  EXPECT_FALSE(v->write64(~uint64_t{0} - 7, 1));
  EXPECT_TRUE(v->write32(v->size() - 4, 1));
}

TEST(Vram, ContainsChecksEndWithoutOverflow) {
  auto v = make_vram();
  EXPECT_TRUE(v->contains(0, v->size()));
  EXPECT_TRUE(v->contains(v->size(), 0));
  EXPECT_FALSE(v->contains(v->size() - 1, 2));
  EXPECT_FALSE(v->contains(1, ~uint64_t{0}));
}

TEST(Vram, ByteCopiesRoundTripAndCheckBounds) {
  auto v = make_vram();
  std::array<uint8_t, 5> in{1, 2, 3, 4, 5}, out{};
  EXPECT_TRUE(v->write(0x301, in.data(), in.size()));
  EXPECT_TRUE(v->read(0x301, out.data(), out.size()));
  EXPECT_EQ(in, out);
  EXPECT_FALSE(v->write(v->size() - 2, in.data(), in.size()));
  EXPECT_FALSE(v->read(v->size() - 2, out.data(), out.size()));
  EXPECT_TRUE(v->fill(0x301, std::byte{0xab}, 2));
  EXPECT_EQ(v->read32(0x300), 0x03abab00u);  // byte 0x303 still holds in[2]
}

TEST(Vram, MemfdMappingSharesPages) {
  auto v = make_vram();
  void* p = mmap(nullptr, 4 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd(), 8 * KiB);
  ASSERT_NE(p, MAP_FAILED);
  uint32_t word = 0x600d;
  std::memcpy(static_cast<std::byte*>(p) + 0x10, &word, sizeof word);
  EXPECT_EQ(v->read32(8 * KiB + 0x10), 0x600du);
  v->write32(8 * KiB + 0x20, 0xfeed);
  std::memcpy(&word, static_cast<std::byte*>(p) + 0x20, sizeof word);
  EXPECT_EQ(word, 0xfeedu);
  munmap(p, 4 * KiB);
}


TEST(VramDetach, DetachedRangeIsSharedThroughItsOwnSealedFd) {
  auto vram = Vram::create(16 * fmt::SMALL_PAGE);
  ASSERT_TRUE(vram);
  ASSERT_TRUE((*vram)->write32(4 * fmt::SMALL_PAGE, 0x1234));
  auto fd = (*vram)->detach(4 * fmt::SMALL_PAGE, 2 * fmt::SMALL_PAGE);
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_EQ((*vram)->read32(4 * fmt::SMALL_PAGE), 0u) << "a detached range starts zeroed";
  void* peer = mmap(nullptr, 2 * fmt::SMALL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  ASSERT_NE(peer, MAP_FAILED);
  static_cast<uint32_t*>(peer)[1] = 0xabcd;
  EXPECT_EQ((*vram)->read32(4 * fmt::SMALL_PAGE + 4), 0xabcdu);
  EXPECT_TRUE((*vram)->write32(5 * fmt::SMALL_PAGE, 7));
  EXPECT_EQ(static_cast<uint32_t*>(peer)[fmt::SMALL_PAGE / 4], 7u);
  EXPECT_NE(ftruncate(*fd, 0), 0) << "the peer cannot shrink it under the GPU";
  EXPECT_NE(ftruncate(*fd, 64 * fmt::SMALL_PAGE), 0);
  munmap(peer, 2 * fmt::SMALL_PAGE);
  close(*fd);
}

TEST(VramDetach, ReattachCutsThePeerOffAndZeroes) {
  auto vram = Vram::create(16 * fmt::SMALL_PAGE);
  ASSERT_TRUE(vram);
  auto fd = (*vram)->detach(2 * fmt::SMALL_PAGE, fmt::SMALL_PAGE);
  ASSERT_TRUE(fd);
  auto* peer = static_cast<uint32_t*>(mmap(nullptr, fmt::SMALL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0));
  ASSERT_NE(static_cast<void*>(peer), MAP_FAILED);
  peer[0] = 5;
  ASSERT_TRUE((*vram)->reattach(2 * fmt::SMALL_PAGE, fmt::SMALL_PAGE));
  EXPECT_EQ((*vram)->read32(2 * fmt::SMALL_PAGE), 0u);
  peer[0] = 6;  // a peer that kept its mapping writes into nothing the GPU sees
  EXPECT_EQ((*vram)->read32(2 * fmt::SMALL_PAGE), 0u);
  munmap(peer, fmt::SMALL_PAGE);
  close(*fd);
}

TEST(VramDetach, RangeOutsideVramOrNotPagesIsRefused) {
  auto vram = Vram::create(4 * fmt::SMALL_PAGE);
  ASSERT_TRUE(vram);
  EXPECT_FALSE((*vram)->detach(3 * fmt::SMALL_PAGE, 2 * fmt::SMALL_PAGE));
  EXPECT_FALSE((*vram)->detach(100, fmt::SMALL_PAGE));
  EXPECT_FALSE((*vram)->detach(0, 0));
}


TEST(VramZero, ZeroesPartialAndWholePages) {
  auto vram = Vram::create(8 * fmt::SMALL_PAGE);
  ASSERT_TRUE(vram);
  ASSERT_TRUE((*vram)->fill(0, std::byte{0xff}, 8 * fmt::SMALL_PAGE));
  ASSERT_TRUE((*vram)->zero(100, 3 * fmt::SMALL_PAGE));
  EXPECT_EQ((*vram)->read32(96), 0xffffffffu);
  for (uint64_t a = 100; a < 100 + 3 * fmt::SMALL_PAGE; a += 4) ASSERT_EQ((*vram)->read32(a), 0u) << a;
  EXPECT_EQ((*vram)->read32(100 + 3 * fmt::SMALL_PAGE), 0xffffffffu);
  EXPECT_FALSE((*vram)->zero(7 * fmt::SMALL_PAGE, 2 * fmt::SMALL_PAGE));
}

// Bytes of the VRAM's memfd the host holds.
uint64_t resident(const Vram& vram) {
  struct stat st {};
  if (fstat(vram.fd(), &st) != 0) return ~uint64_t{0};
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST(VramZero, ALargeRangeIsGivenBackAndASmallOneWritten) {
  const uint64_t big = Vram::ZERO_HOLE_MIN, small = Vram::ZERO_HOLE_MIN / 4;
  auto vram = Vram::create(big + small);
  ASSERT_TRUE(vram);
  ASSERT_TRUE((*vram)->fill(0, std::byte{0xff}, big + small));
  const uint64_t before = resident(**vram);
  ASSERT_GE(before, big + small);
  ASSERT_TRUE((*vram)->zero(big, small));
  EXPECT_EQ(resident(**vram), before) << "a small range is written, its pages kept";
  ASSERT_TRUE((*vram)->zero(0, big));
  EXPECT_LE(resident(**vram), before - big) << "a large range's pages go back to the host";
  for (uint64_t a = 0; a < big + small; a += fmt::SMALL_PAGE) ASSERT_EQ((*vram)->read64(a), 0u) << a;
}

}  // namespace
}  // namespace vgpu::gpu
