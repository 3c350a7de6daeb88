// SPDX-License-Identifier: GPL-2.0-or-later
// Imports that must fail (docs/migration.md §3, §6, §9): a cut image, a
// newer version, an image from a vGPU of another size, a channel record
// the destination refuses part-way. Each is refused with a message naming
// the problem, and the destination is left with no channel bound: the
// same vGPU then takes the good image and runs the guest's chain to the
// unmoved chain's output (an import into a vGPU with a bound channel is
// refused, so a leftover would fail it).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mediator/vgpu_image.h"
#include "tests/testing/moving_vgpu.h"

namespace vgpu::mediator {
namespace {

using namespace moving;

// A source with a chain's jobs in flight, frozen, and its image.
struct Source {
  std::unique_ptr<testbed::Testbed> tb = make_testbed();
  std::unique_ptr<MovingPort> port;
  Chain chain;
  std::vector<std::unique_ptr<driver::Context>> more;  // each binds one more channel
  std::vector<uint8_t> image;

  void start(int extra_contexts = 0) {
    ASSERT_TRUE(tb);
    port = std::make_unique<MovingPort>(&tb->port(0));
    ASSERT_TRUE(chain.open(*port));
    for (int i = 0; i < extra_contexts; ++i) {
      auto ctx = chain.dev->create_context();
      ASSERT_TRUE(ctx) << ctx.error().what();
      more.push_back(std::move(*ctx));
    }
    ASSERT_TRUE(chain.submit(JOBS_BEFORE));
    ASSERT_TRUE(tb->vgpu(0)->freeze(FREEZE_NS));
    ASSERT_TRUE(chain.submit(JOBS_AFTER));  // rung while frozen: travels as GP_PUT
    Result<std::vector<uint8_t>> bytes = tb->vgpu(0)->export_image();
    ASSERT_TRUE(bytes) << bytes.error().what();
    image = std::move(*bytes);
  }
};

void expect_refused(testbed::Testbed& to, std::span<const uint8_t> bytes, const std::string& says) {
  Status imported = to.vgpu(0)->import_image(bytes);
  ASSERT_FALSE(imported) << "a bad image was imported (expected: " << says << ")";
  EXPECT_NE(imported.error().message.find(says), std::string::npos) << imported.error().message;
}

// After the refusals: the good image goes in and the chain ends as the
// unmoved one.
void expect_good_move(Source& from, testbed::Testbed& to) {
  Result<std::vector<std::byte>> want = unmoved_output(JOBS_BEFORE + JOBS_AFTER);
  ASSERT_TRUE(want) << want.error().what();
  Status imported = to.vgpu(0)->import_image(from.image);
  ASSERT_TRUE(imported) << "after a refused import: " << imported.error().what();
  to.vgpu(0)->thaw();
  from.port->move_to(&to.port(0));
  Status ended = from.chain.ends_as(*want);
  EXPECT_TRUE(ended) << ended.error().what();
  EXPECT_TRUE(from.chain.ctx->status()) << "the channel reported an error on the destination";
}

TEST(MigrationImport, CutImagesAreRefusedAndLeaveTheDestinationClean) {
  auto b = make_testbed();  // before the source: the chain's driver ends on it
  ASSERT_TRUE(b);
  Source a;
  ASSERT_NO_FATAL_FAILURE(a.start());
  ASSERT_TRUE(b->vgpu(0)->freeze(FREEZE_NS));  // as QEMU's destination is before its load
  copy_partition(*a.tb, *b);
  const size_t n = a.image.size();
  for (size_t cut : {size_t{0}, IMAGE_HEADER_BYTES - 1, IMAGE_HEADER_BYTES, n / 2, n - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(n));
    expect_refused(*b, std::span(a.image).first(cut), "vgpu: migration image");
  }
  // Corrupt bytes: the header's byte count no longer matches.
  std::vector<uint8_t> longer = a.image;
  longer.push_back(0);
  expect_refused(*b, longer, "vgpu: migration image");
  expect_good_move(a, *b);
}

TEST(MigrationImport, ANewerVersionIsRefusedByName) {
  auto b = make_testbed();  // before the source: the chain's driver ends on it
  ASSERT_TRUE(b);
  Source a;
  ASSERT_NO_FATAL_FAILURE(a.start());
  ASSERT_TRUE(b->vgpu(0)->freeze(FREEZE_NS));
  copy_partition(*a.tb, *b);
  std::vector<uint8_t> newer = a.image;
  const uint32_t version = IMAGE_VERSION + 1;  // little endian, right after the magic
  std::memcpy(newer.data() + sizeof IMAGE_MAGIC, &version, sizeof version);
  expect_refused(*b, newer, "migration image version " + std::to_string(version) + " is newer than this vgpu reads");
  expect_good_move(a, *b);
}

TEST(MigrationImport, AnImageFromAVgpuOfAnotherSizeIsRefusedAndTheDestinationStillWorks) {
  Source a;
  ASSERT_NO_FATAL_FAILURE(a.start());
  auto other = make_testbed(VM_VRAM * 2);
  ASSERT_TRUE(other);
  expect_refused(*other, a.image, "vram=");
  // The refused destination runs its own guest.
  Chain own;
  Status opened = own.open(other->port(0));
  ASSERT_TRUE(opened) << opened.error().what();
  ASSERT_TRUE(own.submit(1));
  Result<std::vector<std::byte>> got = own.result();
  ASSERT_TRUE(got) << got.error().what();
  const auto* f = reinterpret_cast<const float*>(got->data());
  EXPECT_EQ(f[1], 1.5f * 0.75f);  // x[1] = 0.75, y was 0
}

// A record the destination refuses after others were restored: the
// channels already bound by the import are unbound again.
TEST(MigrationImport, AChannelPastItsRingIsRefusedAndNoChannelStaysBound) {
  auto b = make_testbed();  // before the source: the chain's driver ends on it
  ASSERT_TRUE(b);
  Source a;
  ASSERT_NO_FATAL_FAILURE(a.start(1));
  Result<VgpuImage> image = decode_image(a.image);
  ASSERT_TRUE(image) << image.error().what();
  for (ImageSectionBytes& section : image->sections) {
    if (section.tag != static_cast<uint32_t>(ImageSection::channels)) continue;
    Reader r(section.bytes);
    Writer w;
    const uint32_t count = r.u32();
    ASSERT_GE(count, 2u) << "no channel is bound before the refused one";
    w.u32(count);
    for (uint32_t i = 0; i < count; ++i) {
      w.u32(r.u32());
      Result<ChannelRecord> record = decode_channel_record(r);
      ASSERT_TRUE(record) << record.error().what();
      if (i + 1 == count) record->physical_put = ~0u;  // the last one bound
      encode_channel_record(*record, w);
    }
    section.bytes = w.take();
  }
  ASSERT_TRUE(b->vgpu(0)->freeze(FREEZE_NS));
  copy_partition(*a.tb, *b);
  expect_refused(*b, encode_image(*image), "is past its ring");
  expect_good_move(a, *b);
}

// The scheduler weight travels in the 'host' section (vgpuctl set-weight
// on the source survives the move); a weight out of range or a section of
// another size is refused by name before anything changes.
TEST(MigrationImport, TheSourcesWeightTravelsAndABadOneIsRefused) {
  constexpr uint32_t SOURCE_WEIGHT = 7;
  auto b = make_testbed();  // before the source: the chain's driver ends on it
  ASSERT_TRUE(b);
  Source a;
  ASSERT_TRUE(a.tb);
  ASSERT_TRUE(a.tb->host()->set_weight(a.tb->vgpu(0)->id(), SOURCE_WEIGHT));
  ASSERT_NO_FATAL_FAILURE(a.start());
  const uint32_t b_id = b->vgpu(0)->id();
  const uint32_t b_weight = b->host()->weight(b_id);
  ASSERT_NE(b_weight, SOURCE_WEIGHT);
  ASSERT_TRUE(b->vgpu(0)->freeze(FREEZE_NS));
  copy_partition(*a.tb, *b);
  auto with_host_section = [&](std::vector<uint8_t> bytes) {
    Result<VgpuImage> image = decode_image(a.image);
    EXPECT_TRUE(image) << image.error().what();
    for (ImageSectionBytes& section : image->sections)
      if (section.tag == static_cast<uint32_t>(ImageSection::host)) section.bytes = bytes;
    return encode_image(*image);
  };
  expect_refused(*b, with_host_section({0, 0, 0, 0}), "section 'host' has weight 0, not in [1, ");
  expect_refused(*b, with_host_section({1, 0}), "section 'host' has 2 bytes, not the 4");
  EXPECT_EQ(b->host()->weight(b_id), b_weight);
  expect_good_move(a, *b);
  EXPECT_EQ(b->host()->weight(b_id), SOURCE_WEIGHT);
}

}  // namespace
}  // namespace vgpu::mediator
