// SPDX-License-Identifier: GPL-2.0-or-later
// The migration image's codec: a round trip, and each refusal with the
// message that names it (docs/migration.md §3).
#include "mediator/vgpu_image.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/wire_codec.h"
#include "mediator/virtual_registers.h"

namespace vgpu::mediator {
namespace {

constexpr uint64_t VRAM = 256 * MiB;
constexpr uint32_t CHANNELS = 16;
constexpr uint32_t GCHID = 3;
constexpr uint32_t METHOD_WORD = 0x1234;
constexpr uint64_t ERROR_ADDR = 0x1'0000'2000;
constexpr size_t VERSION_AT = sizeof IMAGE_MAGIC;

VgpuImage sample() {
  VgpuImage image;
  image.config = {VRAM, CHANNELS, true, true, false};
  image.sections.push_back({static_cast<uint32_t>(ImageSection::regs), {1, 2, 3, 4, 5}});
  image.sections.push_back({static_cast<uint32_t>(ImageSection::host), {}});
  return image;
}

std::string refusal(std::span<const uint8_t> bytes) {
  Result<VgpuImage> r = decode_image(bytes);
  EXPECT_FALSE(r) << "the image was accepted";
  return r ? std::string() : r.error().message;
}

TEST(VgpuImage, RoundTripKeepsConfigAndSections) {
  const std::vector<uint8_t> bytes = encode_image(sample());
  Result<VgpuImage> back = decode_image(bytes);
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->config, sample().config);
  ASSERT_EQ(back->sections.size(), 2u);
  EXPECT_EQ(back->find(ImageSection::regs)->bytes, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(back->find(ImageSection::host)->bytes.empty());
  EXPECT_EQ(back->find(ImageSection::channels), nullptr);
}

TEST(VgpuImage, NewerVersionIsRefusedByNumber) {
  std::vector<uint8_t> bytes = encode_image(sample());
  bytes[VERSION_AT] = IMAGE_VERSION + 1;
  EXPECT_EQ(refusal(bytes), "vgpu: migration image version 4 is newer than this vgpu reads (3)");
}

TEST(VgpuImage, EveryTruncationIsRefused) {
  const std::vector<uint8_t> bytes = encode_image(sample());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decode_image(std::span(bytes).first(n))) << "accepted the first " << n << " bytes";
}

TEST(VgpuImage, CutSectionNamesItAndWhereItEnds) {
  VgpuImage image = sample();
  std::vector<uint8_t> bytes = encode_image(image);
  // The total in the header says the cut length, so the section is what is short.
  bytes.resize(bytes.size() - 8 - 3);  // the empty host section and 3 bytes of regs
  const uint64_t total = bytes.size();
  for (size_t i = 0; i < sizeof total; ++i) bytes[VERSION_AT + 8 + i] = static_cast<uint8_t>(total >> (8 * i));
  EXPECT_EQ(refusal(bytes), "vgpu: migration image section 'regs' ends at byte " + std::to_string(total) + " of " +
                                std::to_string(total + 3));
}

TEST(VgpuImage, UnknownSectionAndDuplicateAreRefused) {
  VgpuImage image = sample();
  image.sections.push_back({99, {}});
  EXPECT_EQ(refusal(encode_image(image)), "vgpu: migration image has section tag 99, which this vgpu does not know");
  image = sample();
  image.sections.push_back(image.sections.front());
  EXPECT_EQ(refusal(encode_image(image)), "vgpu: migration image has section 'regs' twice");
}

TEST(VgpuImage, BadMagicIsRefused) {
  std::vector<uint8_t> bytes = encode_image(sample());
  bytes[0] = 'X';
  EXPECT_EQ(refusal(bytes), "vgpu: migration image has no VGPUIMG magic");
}

TEST(VgpuImage, ConfigMismatchNamesTheOption) {
  const ImageConfig here{VRAM, CHANNELS, true, true, false};
  ImageConfig theirs = here;
  EXPECT_TRUE(check_image_config(theirs, here));
  theirs.vram_bytes = 2 * VRAM;
  EXPECT_EQ(check_image_config(theirs, here).error().message,
            "vgpu: migration image has vram=512 MiB, this device vram=256 MiB");
  theirs = here;
  theirs.channels = CHANNELS / 2;
  EXPECT_EQ(check_image_config(theirs, here).error().message,
            "vgpu: migration image has channels=8, this device channels=16");
  theirs = here;
  theirs.lazy_shadow = false;
  EXPECT_EQ(check_image_config(theirs, here).error().message,
            "vgpu: migration image has lazy-shadow=off, this device lazy-shadow=on");
}

TEST(VirtualRegistersImage, RoundTripKeepsRecordsAndCounts) {
  VirtualRegisters a;
  a.userd_base = 0x40;
  a.raise_channel_error(GCHID, regs::ChannelError::mmu_fault, METHOD_WORD, ERROR_ADDR);
  a.raise_nonstall(GCHID);
  a.record_fault(regs::FaultUnit::bar1, regs::FaultReason::page_not_present, 0, ERROR_ADDR, true, GCHID);
  Writer w;
  a.save(w);
  VirtualRegisters b;
  Reader r(w.data());
  ASSERT_TRUE(b.restore(r));
  EXPECT_TRUE(r.at_end());
  Writer again;
  b.save(again);
  EXPECT_EQ(again.data(), w.data());
  EXPECT_TRUE(b.channel_errored(GCHID));
  EXPECT_EQ(b.intr0(), a.intr0());
  EXPECT_EQ(b.userd_base, a.userd_base);
}

TEST(VirtualRegistersImage, ShortRecordChangesNothing) {
  VirtualRegisters a;
  a.raise_channel_error(GCHID, regs::ChannelError::mmu_fault, METHOD_WORD, ERROR_ADDR);
  Writer w;
  a.save(w);
  std::vector<uint8_t> cut = w.data();
  cut.pop_back();
  VirtualRegisters b;
  b.pramin_window = 7;
  Reader r(cut);
  EXPECT_FALSE(b.restore(r));
  EXPECT_EQ(b.pramin_window, 7u);
  EXPECT_FALSE(b.channel_errored(GCHID));
}

}  // namespace
}  // namespace vgpu::mediator
