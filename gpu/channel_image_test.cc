// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/channel_image.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"
#include "gpu/engines/kernel_launch.h"
#include "gpu/pushbuf.h"
#include "vgpu/formats.h"
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

// Divided work whose class cannot save its pieces (a user launch's
// resident block).
struct UnsavedWork final : DividedWork {
  MethodDone run_piece(std::optional<uint64_t>) override { return {}; }
  bool finished() const override { return false; }
};

// What the image does not carry is refused by name, never dropped.
TEST(ChannelImage, ARunTheImageCannotCarryIsRefusedSayingWhy) {
  const struct {
    void (*set)(ChannelRun&);
    const char* why;
  } cases[] = {
      {[](ChannelRun& r) { r.engine_wait = true; }, "engine work is outstanding"},
      {[](ChannelRun& r) { r.held = true; }, "between pieces of divided work that is gone"},
      {[](ChannelRun& r) { r.next_piece = true; }, "between pieces of divided work that is gone"},
      {[](ChannelRun& r) { r.parked = true; }, "parked in a semaphore acquire"},
      {[](ChannelRun& r) {
         r.held = true;
         r.divided = std::make_shared<UnsavedWork>();
       },
       "divided work that does not travel (a user kernel launch or a copy"},
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

constexpr uint32_t COMPUTE_SUBCH = 4;
constexpr uint64_t SEGMENT_VA = 0x20'0000;
constexpr uint32_t SEGMENT_WORDS = 8;
constexpr uint32_t LAUNCH_HEADER_INDEX = 3;

// A run held between two slices of a 64-block fill launched by LAUNCH
// (an immediate command at word 3 of its segment), 16 blocks a slice, 2
// slices done.
ChannelRun run_held_in_a_launch() {
  ChannelRun run = run_with_objects();
  run.in_segment = true;
  run.segment_va = SEGMENT_VA;
  run.segment_words = SEGMENT_WORDS;
  run.command_header = fmt::mthd::immediate(COMPUTE_SUBCH, cls::compute::LAUNCH, 0);
  run.command = pushbuf::decode(run.command_header);
  run.command_va = SEGMENT_VA + LAUNCH_HEADER_INDEX * sizeof(uint32_t);
  run.pos = LAUNCH_HEADER_INDEX + 1;
  run.held = true;
  run.op_engine_ns = 1234;
  KernelProgress p{.launch = {.kernel = cls::Kernel::fill, .blocks = 64}, .slice = 16, .next = 32};
  const cls::FillArgs args{.dst = 0x10'0000, .count = 4096, .value = 2.5f};
  std::memcpy(p.launch.args.data(), &args, sizeof args);
  p.launch.arg_bytes = sizeof args;
  run.restored_work = encode_kernel_progress(p);  // as a destination holds it before its load
  return run;
}

TEST(ChannelImage, ARunHeldBetweenSlicesOfALaunchRoundTripsWithItsCursorAndWork) {
  const ChannelRun source = run_held_in_a_launch();
  const ChannelImage image = saved(source);
  ASSERT_TRUE(image.cursor && image.work);
  EXPECT_EQ(image.cursor->header_index, LAUNCH_HEADER_INDEX);
  EXPECT_TRUE(image.work->held);
  EXPECT_EQ(image.work->op_engine_ns, 1234u);
  const std::vector<uint8_t> bytes = encoded(image);
  Reader r(bytes);
  auto decoded = decode_channel(r);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().what();
  EXPECT_EQ(*decoded, image);
  ChannelRun moved;
  ASSERT_TRUE(restore_channel_run(CHID, moved, *decoded).has_value());
  EXPECT_TRUE(moved.in_segment && moved.command && moved.held && moved.restored_work);
  EXPECT_EQ(moved.pos, source.pos);
  EXPECT_EQ(moved.command_va, source.command_va);
  EXPECT_EQ(saved(moved), image);

  // Every cut of it, and the same bytes read as an older layout (which
  // ends after the objects), are refused.
  for (size_t n = 0; n < bytes.size(); ++n) {
    Reader cut{std::span(bytes).first(n)};
    EXPECT_FALSE(decode_channel(cut).has_value()) << n << " bytes";
  }
  Reader older(bytes);
  ASSERT_TRUE(decode_channel(older, ChannelImageLayout::entry_boundary).has_value());
  EXPECT_FALSE(older.at_end()) << "the older layout read the cursor";
}

std::string decode_error(const ChannelImage& image) {
  const std::vector<uint8_t> bytes = encoded(image);
  Reader r(bytes);
  auto d = decode_channel(r);
  return d ? std::string() : d.error().what();
}

TEST(ChannelImage, AnOversizedWorkStateOrACursorOutsideItsCommandIsRefusedByName) {
  const ChannelImage good = saved(run_held_in_a_launch());
  ChannelImage image = good;
  image.work->state.bytes.resize(MAX_WORK_STATE_BYTES + 1);
  EXPECT_NE(decode_error(image).find("divided work state of 4097 bytes (at most 4096)"), std::string::npos)
      << decode_error(image);
  image = good;
  image.cursor->in_command = false;
  image.cursor->header = image.cursor->header_index = image.cursor->command_done = 0;
  EXPECT_NE(decode_error(image).find("divided work outside a command"), std::string::npos) << decode_error(image);
  image = good;
  image.cursor->pos = LAUNCH_HEADER_INDEX + 2;
  EXPECT_NE(decode_error(image).find("a next word that is not its command's"), std::string::npos)
      << decode_error(image);
  image = good;
  image.cursor->segment_words = LAUNCH_HEADER_INDEX;
  EXPECT_NE(decode_error(image).find("cursor has"), std::string::npos) << decode_error(image);
  image = good;
  image.cursor->header = fmt::mthd::header(fmt::mthd::Op::end_segment, 0, 0, 0);
  EXPECT_NE(decode_error(image).find("a command header that starts no method"), std::string::npos)
      << decode_error(image);
}

// The work is checked by its object before anything of the run changes.
TEST(ChannelImage, CorruptProgressIsRefusedByItsObjectAndLeavesTheRun) {
  const ChannelImage good = saved(run_held_in_a_launch());
  const auto refused = [](const ChannelImage& image) {
    ChannelRun run = run_with_objects();
    auto r = restore_channel_run(CHID, run, image);
    EXPECT_FALSE(run.in_segment || run.restored_work) << "a refused restore changed the run";
    EXPECT_EQ(run.sem_a, 0x12u);
    return r ? std::string() : r.error().what();
  };
  const auto progress = [&](void (*change)(KernelProgress&)) {
    ChannelImage image = good;
    KernelProgress p = *decode_kernel_progress(image.work->state);
    change(p);
    image.work->state = encode_kernel_progress(p);
    return image;
  };
  EXPECT_NE(refused(progress([](KernelProgress& p) { p.next = p.launch.blocks; })).find("goes on at block 64 of 64"),
            std::string::npos);
  EXPECT_NE(refused(progress([](KernelProgress& p) { p.next = 0; })).find("goes on at block 0 of 64"),
            std::string::npos);
  EXPECT_NE(refused(progress([](KernelProgress& p) {
              p.launch.kernel = static_cast<cls::Kernel>(77);
            })).find("kernel 77, which the device does not have"),
            std::string::npos);
  EXPECT_NE(refused(progress([](KernelProgress& p) { p.slice = 0; })).find("a slice of 0 blocks"), std::string::npos);
  EXPECT_NE(refused(progress([](KernelProgress& p) { p.launch.arg_bytes = 8; })).find("8 argument bytes"),
            std::string::npos);
  ChannelImage image = good;
  image.work->state.bytes.push_back(0);
  EXPECT_NE(refused(image).find("is cut or has bytes left over"), std::string::npos) << refused(image);
  image = good;
  image.work->state.kind = 9;
  EXPECT_NE(refused(image).find("of kind 9"), std::string::npos) << refused(image);
  image = good;
  image.objects.pop_back();  // the compute object on subchannel 4
  EXPECT_NE(refused(image).find("no object on its command's subchannel"), std::string::npos) << refused(image);
  image = good;
  image.cursor->header = fmt::mthd::immediate(1, cls::compute::LAUNCH, 0);  // the copy object's subchannel
  EXPECT_NE(refused(image).find("has no divided work that travels"), std::string::npos) << refused(image);
}

}  // namespace
}  // namespace vgpu::gpu
