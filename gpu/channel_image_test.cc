// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/channel_image.h"

#include <gtest/gtest.h>

#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"
#include "vgpu/classes.h"

namespace vgpu::gpu {
namespace {

constexpr uint32_t CHID = 5;

ChannelRun run_with_objects() {
  ChannelRun run;
  run.loaded = true;
  run.sem_a = 0x12;
  run.sem_b = 0x3456'7800;
  run.sem_c = 7;
  run.mem_op_a = 0x9;
  run.objects[1] = std::make_unique<CopyObject>();
  run.objects[4] = std::make_unique<ComputeObject>();
  return run;
}

ChannelImage saved(const ChannelRun& run) {
  auto image = save_channel_run(CHID, run);
  EXPECT_TRUE(image.has_value()) << image.error().what();
  return image.value_or(ChannelImage{});
}

std::vector<uint8_t> encoded(const ChannelImage& image) {
  Writer w;
  encode_channel(image, w);
  return w.take();
}

TEST(ChannelImage, ARunAtAnEntryBoundaryRoundTripsIntoANewRun) {
  const ChannelRun source = run_with_objects();
  const ChannelImage image = saved(source);
  ASSERT_EQ(image.objects.size(), 2u);
  EXPECT_EQ(image.objects[0].subch, 1u);
  EXPECT_EQ(image.objects[0].class_id, cls::DMA_COPY);
  EXPECT_EQ(image.objects[1].class_id, cls::COMPUTE);

  const std::vector<uint8_t> bytes = encoded(image);
  Reader r(bytes);
  auto decoded = decode_channel(r);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().what();
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(*decoded, image);

  ChannelRun moved;
  ASSERT_TRUE(restore_channel_run(CHID, moved, *decoded).has_value());
  EXPECT_EQ(moved.sem_b, source.sem_b);
  EXPECT_EQ(moved.mem_op_a, source.mem_op_a);
  ASSERT_NE(moved.objects[1], nullptr);
  EXPECT_EQ(moved.objects[1]->class_id(), cls::DMA_COPY);
  ASSERT_NE(moved.objects[4], nullptr);
  EXPECT_EQ(moved.objects[0], nullptr);
  EXPECT_EQ(saved(moved), image);
}

TEST(ChannelImage, EveryCutOfTheBytesIsRefusedWithWhereItEnds) {
  const std::vector<uint8_t> bytes = encoded(saved(run_with_objects()));
  for (size_t n = 0; n < bytes.size(); ++n) {
    Reader r{std::span(bytes).first(n)};
    auto d = decode_channel(r);
    ASSERT_FALSE(d.has_value()) << n << " bytes";
    EXPECT_NE(d.error().what().find("ends at byte"), std::string::npos) << d.error().what();
  }
}

TEST(ChannelImage, ObjectsOutOfRangeTwiceOrTooLargeAreRefusedByName) {
  auto decode = [](const ChannelImage& image) {
    const std::vector<uint8_t> bytes = encoded(image);
    Reader r(bytes);
    auto d = decode_channel(r);
    return d ? std::string() : d.error().what();
  };
  ChannelImage image;
  image.objects = {{regs::NUM_SUBCHANNELS, cls::DMA_COPY, {}}};
  EXPECT_NE(decode(image).find("subchannel 8 (out of range)"), std::string::npos) << decode(image);
  image.objects = {{2, cls::DMA_COPY, {}}, {2, cls::COMPUTE, {}}};
  EXPECT_NE(decode(image).find("subchannel 2 (given twice)"), std::string::npos) << decode(image);
  image.objects = {{0, cls::DMA_COPY, std::vector<uint8_t>(MAX_OBJECT_STATE_BYTES + 1)}};
  EXPECT_NE(decode(image).find(std::to_string(MAX_OBJECT_STATE_BYTES + 1) + " bytes"), std::string::npos)
      << decode(image);
  image.objects.assign(regs::NUM_SUBCHANNELS + 1, ObjectImage{});
  EXPECT_NE(decode(image).find("has 9 objects"), std::string::npos) << decode(image);
}

TEST(ChannelImage, ARestoreOfAClassNotHereOrAStateItsClassRefusesLeavesTheRun) {
  ChannelRun run = run_with_objects();
  ChannelImage image = saved(run);
  image.sem_a = 0x77;
  image.objects[0].class_id = 0x9097;
  auto r = restore_channel_run(CHID, run, image);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("class 0x9097 is not on this device"), std::string::npos) << r.error().what();
  image.objects[0].class_id = cls::DMA_COPY;
  image.objects[0].state.pop_back();
  r = restore_channel_run(CHID, run, image);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("subchannel 1 is refused by its class"), std::string::npos) << r.error().what();
  EXPECT_EQ(run.sem_a, 0x12u);
  EXPECT_NE(run.objects[4], nullptr);
}

// What the image does not carry yet is refused by name, never dropped.
TEST(ChannelImage, ARunAwayFromAnEntryBoundaryIsRefusedSayingWhy) {
  const struct {
    void (*set)(ChannelRun&);
    const char* why;
  } cases[] = {
      {[](ChannelRun& r) { r.engine_wait = true; }, "engine work is outstanding"},
      {[](ChannelRun& r) { r.held = true; }, "between pieces of divided work"},
      {[](ChannelRun& r) { r.next_piece = true; }, "between pieces of divided work"},
      {[](ChannelRun& r) { r.parked = true; }, "parked in a semaphore acquire"},
      {[](ChannelRun& r) { r.in_segment = true; }, "inside a push-buffer segment"},
  };
  for (const auto& c : cases) {
    ChannelRun run = run_with_objects();
    c.set(run);
    auto image = save_channel_run(CHID, run);
    ASSERT_FALSE(image.has_value()) << c.why;
    EXPECT_NE(image.error().what().find(c.why), std::string::npos) << image.error().what();
    EXPECT_NE(image.error().what().find("channel 5"), std::string::npos) << image.error().what();
  }
}

}  // namespace
}  // namespace vgpu::gpu
