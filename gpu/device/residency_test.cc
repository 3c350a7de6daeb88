// SPDX-License-Identifier: GPL-2.0-or-later
// The residency tracker with the fake device: every state transition of
// docs/cuda.md's table, the direct-mapped page rules, and the bytes each
// side sees (the fake mirror starts as garbage, so a missed transfer shows).
#include "gpu/device/residency.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <unistd.h>

#include "gpu/device/fake_device.h"

namespace vgpu::gpu {
namespace {

constexpr uint64_t PAGE = ResidencyTracker::PAGE;

struct Fixture {
  std::unique_ptr<Vram> vram = std::move(*Vram::create(64 * PAGE));
  FakeDevice dev{*vram};
  ResidencyTracker res{vram->size(), dev};
  Fixture() { vram->set_observer(&res); }
  ~Fixture() { vram->set_observer(nullptr); }
  // What the device holds at addr (the engine's view).
  uint32_t device_word(uint64_t addr) {
    uint32_t v;
    std::memcpy(&v, dev.mirror(addr), sizeof v);
    return v;
  }
  // What the guest reads at addr through its own mapping of VRAM (no hook runs).
  uint32_t guest_word(uint64_t addr) {
    uint32_t v;
    std::memcpy(&v, vram->data() + addr, sizeof v);
    return v;
  }
  void device_write(uint64_t addr, uint32_t v) { std::memcpy(dev.mirror(addr), &v, sizeof v); }
  // An engine that writes one word: the protocol device_work.cc follows.
  void engine_writes(uint64_t addr, uint32_t v) {
    res.prepare_write(addr, sizeof v, false);
    device_write(addr, v);
    res.finish_write(addr, sizeof v);
  }
};

TEST(Residency, StartsValidOnTheHostOnly) {
  Fixture f;
  EXPECT_EQ(f.res.state(0), Residency::host);
  EXPECT_FALSE(f.res.direct(0));
  EXPECT_EQ(f.res.stats().uploads, 0u);
}

TEST(Residency, EngineReadUploadsHostPagesOnce) {
  Fixture f;
  ASSERT_TRUE(f.vram->write32(PAGE, 0x1234));
  f.res.prepare_read(PAGE, 3 * PAGE);
  EXPECT_EQ(f.res.state(PAGE), Residency::both);
  EXPECT_EQ(f.device_word(PAGE), 0x1234u);
  EXPECT_EQ(f.dev.stats().uploads, 1u);  // three pages, one coalesced run
  EXPECT_EQ(f.dev.stats().upload_bytes, 3 * PAGE);
  f.res.prepare_read(PAGE, 3 * PAGE);  // both: nothing moves
  EXPECT_EQ(f.dev.stats().uploads, 1u);
}

TEST(Residency, EngineWriteLeavesPageDeviceOnlyWithoutDownload) {
  Fixture f;
  f.engine_writes(2 * PAGE, 7);
  EXPECT_EQ(f.res.state(2 * PAGE), Residency::device);
  EXPECT_EQ(f.dev.stats().downloads, 0u);
}

TEST(Residency, PartialWriteUploadsTheRestOfThePageFirst) {
  Fixture f;
  ASSERT_TRUE(f.vram->write32(2 * PAGE + 8, 0xbeef));  // host bytes the engine does not write
  f.engine_writes(2 * PAGE, 7);
  EXPECT_EQ(f.dev.stats().uploads, 1u);
  EXPECT_EQ(f.vram->read32(2 * PAGE + 8), 0xbeefu);  // survives the round trip
  EXPECT_EQ(f.vram->read32(2 * PAGE), 7u);
}

TEST(Residency, WholePageOverwriteNeedsNoUpload) {
  Fixture f;
  f.res.prepare_write(PAGE / 2, 3 * PAGE, true);  // pages 1 and 2 whole; 0 and 3 partly
  EXPECT_EQ(f.dev.stats().upload_bytes, 2 * PAGE);
  EXPECT_EQ(f.dev.stats().uploads, 2u);
}

TEST(Residency, CpuReadOfDevicePageDownloadsItAndKeepsBoth) {
  Fixture f;
  f.engine_writes(PAGE, 42);
  EXPECT_EQ(f.vram->read32(PAGE), 42u);
  EXPECT_EQ(f.res.state(PAGE), Residency::both);
  EXPECT_EQ(f.dev.stats().downloads, 1u);
  EXPECT_EQ(f.vram->read32(PAGE + 4), f.vram->read32(PAGE + 4));  // both: no more transfers
  EXPECT_EQ(f.dev.stats().downloads, 1u);
}

TEST(Residency, CpuReadOfHostOrBothPageMovesNothing) {
  Fixture f;
  (void)f.vram->read32(0);
  f.res.prepare_read(0, PAGE);
  (void)f.vram->read32(0);
  EXPECT_EQ(f.dev.stats().downloads, 0u);
}

TEST(Residency, CpuWriteOfBothPageMakesItHostOnlyAndTheNextReadUploads) {
  Fixture f;
  f.res.prepare_read(0, PAGE);
  ASSERT_TRUE(f.vram->write32(0, 99));
  EXPECT_EQ(f.res.state(0), Residency::host);
  f.res.prepare_read(0, PAGE);
  EXPECT_EQ(f.device_word(0), 99u);
  EXPECT_EQ(f.dev.stats().uploads, 2u);
}

TEST(Residency, CpuWriteOfDevicePageDownloadsTheRestFirst) {
  Fixture f;
  f.res.prepare_write(0, PAGE, true);
  f.device_write(0, 1);
  f.device_write(8, 2);
  f.res.finish_write(0, PAGE);
  ASSERT_TRUE(f.vram->write32(0, 5));  // one word of the page
  EXPECT_EQ(f.res.state(0), Residency::host);
  EXPECT_EQ(f.vram->read32(8), 2u);  // the engine's other word was not lost
  EXPECT_EQ(f.vram->read32(0), 5u);
}

TEST(Residency, ByteCopiesAndFillsAreCpuAccessesToo) {
  Fixture f;
  f.engine_writes(PAGE, 3);
  uint32_t v = 0;
  ASSERT_TRUE(f.vram->read(PAGE, &v, sizeof v));
  EXPECT_EQ(v, 3u);
  ASSERT_TRUE(f.vram->fill(PAGE, std::byte{0}, PAGE));
  EXPECT_EQ(f.res.state(PAGE), Residency::host);
}

TEST(Residency, MarkingADevicePageDirectDownloadsIt) {
  Fixture f;
  f.engine_writes(PAGE, 11);
  f.res.mark_direct(PAGE, PAGE);
  EXPECT_TRUE(f.res.direct(PAGE));
  EXPECT_EQ(f.res.state(PAGE), Residency::both);
  // The guest reads through its own mapping: no hook, the bytes are there.
  EXPECT_EQ(f.guest_word(PAGE), 11u);
}

TEST(Residency, DirectPageIsNeverLeftDeviceOnly) {
  Fixture f;
  f.res.mark_direct(PAGE, PAGE);
  f.engine_writes(PAGE, 21);
  EXPECT_EQ(f.res.state(PAGE), Residency::both);
  EXPECT_EQ(f.guest_word(PAGE), 21u);  // a guest reading through BAR1 right after
}

TEST(Residency, DirectPageIsUploadedBeforeEveryRead) {
  Fixture f;
  f.res.mark_direct(0, PAGE);
  f.res.prepare_read(0, PAGE);
  // A guest writes the BAR-mapped input between two launches, unseen.
  const uint32_t v = 77;
  std::memcpy(f.vram->data(), &v, sizeof v);
  f.res.prepare_read(0, PAGE);
  EXPECT_EQ(f.device_word(0), 77u);
  EXPECT_EQ(f.dev.stats().uploads, 2u);
}

TEST(Residency, DirectDownloadsQueuedOnTheWorkStreamAreRecordedOnce) {
  Fixture f;
  f.res.mark_direct(0, 2 * PAGE);
  f.res.prepare_write(0, 2 * PAGE, true, 3);
  f.device_write(PAGE, 5);
  const uint64_t gen = f.res.queue_direct_downloads(0, 2 * PAGE, 3);
  EXPECT_EQ(f.dev.stats().downloads, 1u);  // both pages, one run
  f.res.finish_write(0, 2 * PAGE, gen);
  EXPECT_EQ(f.dev.stats().downloads, 1u);
  EXPECT_EQ(f.res.state(PAGE), Residency::both);
  EXPECT_EQ(f.guest_word(PAGE), 5u);
}

TEST(Residency, PageMadeDirectAfterTheQueueIsDownloadedAtFinish) {
  Fixture f;
  f.res.prepare_write(0, PAGE, true, 3);
  f.device_write(0, 6);
  const uint64_t gen = f.res.queue_direct_downloads(0, PAGE, 3);  // not direct yet: nothing queued
  EXPECT_EQ(f.dev.stats().downloads, 0u);
  f.res.mark_direct(0, PAGE);  // a BAR maps it while the work runs
  f.res.finish_write(0, PAGE, gen);
  EXPECT_EQ(f.res.state(0), Residency::both);
  EXPECT_EQ(f.guest_word(0), 6u);
}

TEST(Residency, CpuWriteNextToAResultWhileTheWorkRunsIsKept) {
  Fixture f;
  f.res.mark_direct(0, PAGE);
  f.res.prepare_write(0, 8, true, 3);      // the work writes bytes [0, 8)
  ASSERT_TRUE(f.vram->write32(64, 0xfe));  // a fence in the same page, meanwhile
  f.device_write(0, 9);
  const uint64_t gen = f.res.queue_direct_downloads(0, 8, 3);
  f.res.finish_write(0, 8, gen);
  EXPECT_EQ(f.dev.stats().download_bytes, 8u);  // the written bytes only
  EXPECT_EQ(f.guest_word(64), 0xfeu);
  EXPECT_EQ(f.guest_word(0), 9u);
}

TEST(Residency, CpuWriteToAPageTheWorkWritesKeepsItAndGetsTheResult) {
  Fixture f;
  f.res.prepare_write(0, PAGE, true);            // a whole page, not direct-mapped
  ASSERT_TRUE(f.vram->write32(PAGE - 4, 0xab));  // meanwhile, the CPU writes into it
  f.device_write(0, 4);
  f.res.finish_write(0, 8);  // the work wrote [0, 8)
  EXPECT_EQ(f.res.state(0), Residency::host);
  EXPECT_EQ(f.vram->read32(0), 4u);
  EXPECT_EQ(f.vram->read32(PAGE - 4), 0xabu);
}

TEST(Residency, WriteOnlyWorkOnADirectPageUploadsNothing) {
  Fixture f;
  f.res.mark_direct(0, PAGE);
  f.res.prepare_write(0, 4, true, 3);  // four bytes of it, write-only
  EXPECT_EQ(f.dev.stats().uploads, 0u);
  f.res.prepare_write(0, 4, false, 3);  // read-write: the bytes it reads must be there
  EXPECT_EQ(f.dev.stats().uploads, 1u);
}

TEST(Residency, DetachedRangeIsDirectAndHostValid) {
  Fixture f;
  f.engine_writes(4 * PAGE, 1);
  auto fd = f.vram->detach(4 * PAGE, 2 * PAGE);
  ASSERT_TRUE(fd.has_value());
  EXPECT_EQ(f.res.state(4 * PAGE), Residency::host);
  EXPECT_TRUE(f.res.direct(4 * PAGE));
  ASSERT_TRUE(f.vram->reattach(4 * PAGE, 2 * PAGE).has_value());
  EXPECT_FALSE(f.res.direct(4 * PAGE));
  close(*fd);
}

TEST(Residency, RangesOutsideVramAreIgnored) {
  Fixture f;
  f.res.prepare_read(f.vram->size(), PAGE);
  f.res.prepare_write(f.vram->size() - 4, 100, false);  // clamped to the last page
  f.res.finish_write(f.vram->size() - 4, 100);
  EXPECT_EQ(f.res.state(f.vram->size() - PAGE), Residency::device);
  EXPECT_EQ(f.res.state(f.vram->size()), Residency::host);
}

// A stream of launches on the same buffers: once a prepare left a range
// valid on the device, preparing it again looks at no page until a page
// goes back to the host or becomes direct-mapped.
TEST(Residency, ARepeatedPrepareOfAnUnchangedRangeIsClean) {
  Fixture f;
  f.res.prepare_read(0, 8 * PAGE);
  f.res.prepare_read(0, 8 * PAGE);
  f.res.prepare_write(8 * PAGE, 4 * PAGE, true);
  f.res.finish_write(8 * PAGE, 4 * PAGE);
  f.res.prepare_write(8 * PAGE, 4 * PAGE, true);
  f.res.finish_write(8 * PAGE, 4 * PAGE);
  EXPECT_EQ(f.res.stats().clean_prepares, 2u);
  EXPECT_EQ(f.dev.stats().uploads, 1u);
  EXPECT_EQ(f.res.state(8 * PAGE), Residency::device);
  // A different range, or the same one prepared another way, is not.
  f.res.prepare_read(0, 4 * PAGE);
  f.res.prepare_write(0, 8 * PAGE, false);
  EXPECT_EQ(f.res.stats().clean_prepares, 2u);
}

TEST(Residency, ACpuWriteMakesTheNextPrepareLookAgain) {
  Fixture f;
  f.res.prepare_read(0, 8 * PAGE);
  ASSERT_TRUE(f.vram->write32(3 * PAGE, 0xabcd));  // both -> host
  f.res.prepare_read(0, 8 * PAGE);
  EXPECT_EQ(f.res.stats().clean_prepares, 0u);
  EXPECT_EQ(f.device_word(3 * PAGE), 0xabcdu);
  EXPECT_EQ(f.dev.stats().uploads, 2u);
  f.res.prepare_read(0, 8 * PAGE);  // clean again
  EXPECT_EQ(f.res.stats().clean_prepares, 1u);
  // A write the engine made, then a CPU write of that page: uploaded again.
  f.engine_writes(PAGE, 7);
  ASSERT_TRUE(f.vram->write32(PAGE + 4, 9));  // device -> download, host
  f.res.prepare_read(0, 8 * PAGE);
  EXPECT_EQ(f.device_word(PAGE), 7u);
  EXPECT_EQ(f.device_word(PAGE + 4), 9u);
}

TEST(Residency, DirectMappedPagesAreNeverClean) {
  Fixture f;
  f.res.prepare_read(0, 8 * PAGE);
  f.res.mark_direct(2 * PAGE, PAGE);
  for (int i = 0; i < 3; ++i) f.res.prepare_read(0, 8 * PAGE);
  EXPECT_EQ(f.res.stats().clean_prepares, 0u);
  EXPECT_EQ(f.dev.stats().uploads, 4u);  // the first, then the direct page each time
}

TEST(Residency, ARemappedRangeIsNotClean) {
  Fixture f;
  f.res.prepare_read(0, 8 * PAGE);
  f.res.host_remapped(0, 8 * PAGE, false);
  f.res.prepare_read(0, 8 * PAGE);
  EXPECT_EQ(f.res.stats().clean_prepares, 0u);
  EXPECT_EQ(f.dev.stats().uploads, 2u);
}

// Work whose fence the GPU writes (docs/cuda.md, "Fences"): between
// begin_write and finish_write a CPU may already know the work is done.
TEST(Residency, APageBeingWrittenIsDownloadedOnEveryReadUntilTheWriteFinishes) {
  Fixture f;
  ASSERT_TRUE(f.vram->write32(2 * PAGE, 1));
  f.res.prepare_write(2 * PAGE, PAGE, false);
  f.res.begin_write(2 * PAGE, PAGE);
  EXPECT_EQ(f.res.state(2 * PAGE), Residency::writing);
  f.device_write(2 * PAGE, 2);  // the work, part way
  EXPECT_EQ(f.vram->read32(2 * PAGE), 2u);
  f.device_write(2 * PAGE, 3);              // the rest of it; the fence is now visible
  EXPECT_EQ(f.vram->read32(2 * PAGE), 3u);  // not the first download's bytes
  EXPECT_EQ(f.res.state(2 * PAGE), Residency::writing);
  EXPECT_EQ(f.dev.stats().downloads, 2u);
  f.res.finish_write(2 * PAGE, PAGE);
  EXPECT_EQ(f.res.state(2 * PAGE), Residency::device);
  EXPECT_EQ(f.vram->read32(2 * PAGE), 3u);
  EXPECT_EQ(f.res.state(2 * PAGE), Residency::both);
  EXPECT_EQ(f.dev.stats().downloads, 3u);
}

TEST(Residency, ACpuWriteDuringAWriteKeepsItsBytesBesideTheWorks) {
  Fixture f;
  f.res.prepare_write(0, 8, false);  // the work writes words 0 and 1 of page 0
  f.res.begin_write(0, 8);
  ASSERT_TRUE(f.vram->write32(16, 0x77));  // a CPU writes word 4 meanwhile
  EXPECT_EQ(f.res.state(0), Residency::host);
  f.device_write(0, 5);
  f.device_write(4, 6);
  f.res.finish_write(0, 8);
  EXPECT_EQ(f.res.state(0), Residency::host);
  EXPECT_EQ(f.vram->read32(0), 5u);
  EXPECT_EQ(f.vram->read32(4), 6u);
  EXPECT_EQ(f.vram->read32(16), 0x77u);
}

TEST(Residency, DirectMappedPagesAreNotMarkedBeingWritten) {
  Fixture f;
  f.res.mark_direct(0, PAGE);
  f.res.prepare_write(0, 2 * PAGE, false);
  f.res.begin_write(0, 2 * PAGE);
  EXPECT_EQ(f.res.state(0), Residency::both);  // downloaded before the fence instead
  EXPECT_EQ(f.res.state(PAGE), Residency::writing);
  // A page that becomes direct-mapped while being written is downloaded.
  f.device_write(PAGE, 42);
  f.res.mark_direct(PAGE, PAGE);
  EXPECT_EQ(f.res.state(PAGE), Residency::both);
  EXPECT_EQ(f.vram->read32(PAGE), 42u);
}

}  // namespace
}  // namespace vgpu::gpu
