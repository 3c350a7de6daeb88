// SPDX-License-Identifier: GPL-2.0-or-later
// A move during a long sliced launch (docs/migration.md §2, "Divided launch
// between pieces"; issue 35 item 5): the source is frozen between two
// pieces of a saxpy, its image carries the launch and the next piece, and
// a fresh destination runs the pieces left. Every element is computed
// exactly once (one more run of any piece shows as another 1.5 x added),
// the fence comes on the destination only, and a corrupt progress record
// is refused by name with the destination left to take the good image.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "channels/shadow_channels.h"
#include "gpu/engines/kernel_launch.h"
#include "mediator/vgpu_image.h"
#include "tests/testing/moving_vgpu.h"
#include "testbed/testing/testbeds.h"

namespace vgpu::mediator {
namespace {

using namespace moving;

constexpr uint64_t BIG_VRAM = 128 * MiB;
// Two launches long enough that a freeze a moment after the launch lands
// inside it: a saxpy of 2 Mi elements (8,192 blocks) cut into 128 slices
// of 64 blocks, each held for the host until its VM's turn resumes it
// (frozen once the first was resumed);
// and an sgemm of 1536^3 (7 GFLOP: hundreds of ms) cut into timed pieces,
// which run on while the VM is alone until the freeze asks for the engine.
constexpr uint32_t ELEMENTS = 2u << 20;
constexpr uint32_t SLICE_BLOCKS = 64;
constexpr uint32_t DIM = 1536;
constexpr float A = 1.5f, X = 2.0f, Y = 1.0f;
// Each element's value when computed once, exact in float: a second run
// of any piece adds to it again (saxpy: 7, sgemm: 2 DIM + 1).
constexpr float SAXPY_ONCE = A * X + Y;
constexpr float SGEMM_ONCE = static_cast<float>(DIM) + 1.0f;  // ones times ones, plus c = 1
constexpr auto INTO_LAUNCH = std::chrono::milliseconds(2);
constexpr uint64_t NOT_YET_NS = 20'000'000;
constexpr int START_ATTEMPTS = 5;

std::unique_ptr<testbed::Testbed> make(uint32_t slice_blocks) {
  testbed::TestbedConfig tc = testing::one_vm(testbed::Mode::fv_naive, BIG_VRAM, VM_CHANNELS);
  if (slice_blocks != 0) tc.slice_blocks = {slice_blocks};
  return testing::create_testbed(tc);
}

// The image's channel records (the test reads what it carries).
std::vector<std::pair<uint32_t, ChannelRecord>> records_of(const std::vector<uint8_t>& bytes) {
  std::vector<std::pair<uint32_t, ChannelRecord>> out;
  Result<VgpuImage> image = decode_image(bytes);
  EXPECT_TRUE(image) << image.error().what();
  const ImageSectionBytes* section = image ? image->find(ImageSection::channels) : nullptr;
  if (!section) return out;
  Reader r(section->bytes);
  const uint32_t count = r.u32();
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    const uint32_t c = r.u32();
    Result<ChannelRecord> record = decode_channel_record(r);
    EXPECT_TRUE(record) << record.error().what();
    if (!record) break;
    out.emplace_back(c, std::move(*record));
  }
  return out;
}

// The image with channel c's divided work replaced by `work`.
std::vector<uint8_t> with_work(const std::vector<uint8_t>& bytes, const gpu::WorkState& work) {
  Result<VgpuImage> image = decode_image(bytes);
  std::vector<std::pair<uint32_t, ChannelRecord>> records = records_of(bytes);
  Writer w;
  w.u32(static_cast<uint32_t>(records.size()));
  for (auto& [c, record] : records) {
    if (record.run.work) record.run.work->state = work;
    w.u32(c);
    encode_channel_record(record, w);
  }
  for (ImageSectionBytes& s : image->sections)
    if (s.tag == static_cast<uint32_t>(ImageSection::channels)) s.bytes = w.take();
  return encode_image(*image);
}

enum class Launch { saxpy_in_block_slices, sgemm_in_timed_pieces };

struct SlicedMove {
  std::unique_ptr<testbed::Testbed> a, b;
  MovingPort port{nullptr};
  GuestContext guest;
  driver::Buffer x{}, y{}, c{};
  uint32_t elements = 0;
  float once = 0;
  driver::Fence launch{};

  Result<driver::Buffer> filled(uint32_t count, float value) {
    auto buf = guest.ctx->alloc(uint64_t{count} * sizeof(float));
    if (!buf) return buf;
    auto f = guest.ctx->fill({*buf, count, value});
    if (!f) return std::unexpected(f.error());
    if (Status s = guest.ctx->wait(*f); !s) return std::unexpected(s.error());
    return buf;
  }

  // A freeze lands inside the launch unless the test thread lost the CPU
  // for the launch's whole length (a loaded machine): then again, from
  // fresh vGPUs, up to START_ATTEMPTS times.
  void start(Launch kind) {
    for (int attempt = 1;; ++attempt) {
      ASSERT_NO_FATAL_FAILURE(start_once(kind));
      if (holds_launch() || attempt == START_ATTEMPTS) return;
      guest.ctx.reset();  // before the vGPUs it runs on
      guest.dev.reset();
      a.reset();
      b.reset();
    }
  }

  // Whether the frozen source's image carries divided work (an image that
  // does not export counts as yes: the test's own export reports it).
  bool holds_launch() const {
    Result<std::vector<uint8_t>> image = a->vgpu(0)->export_image();
    if (!image) return true;
    for (const auto& [channel, record] : records_of(*image))
      if (record.run.work) return true;
    return false;
  }

  void start_once(Launch kind) {
    const bool gemm = kind == Launch::sgemm_in_timed_pieces;
    a = make(gemm ? 0 : SLICE_BLOCKS);
    b = make(gemm ? 0 : SLICE_BLOCKS);
    ASSERT_TRUE(a && b);
    port.move_to(&a->port(0));
    ASSERT_TRUE(guest.open_context(port));
    elements = gemm ? DIM * DIM : ELEMENTS;
    once = gemm ? SGEMM_ONCE : SAXPY_ONCE;
    auto bx = filled(elements, gemm ? 1.0f : X), by = filled(elements, gemm ? 1.0f : Y);
    auto bc = gemm ? filled(elements, 1.0f) : by;
    ASSERT_TRUE(bx && by && bc);
    x = *bx;
    y = *by;
    c = *bc;                                                        // the output: y for saxpy
    const uint64_t resumed = a->vgpu(0)->counters().slice_resumes;  // the fills' slices
    auto f = gemm ? guest.ctx->sgemm({x, y, c, DIM, DIM, DIM, 1.0f, 1.0f}) : guest.ctx->saxpy({x, y, ELEMENTS, A});
    ASSERT_TRUE(f) << f.error().what();
    launch = *f;
    if (gemm) {
      std::this_thread::sleep_for(INTO_LAUNCH);  // its first piece runs
    } else {
      // Its first slice ran and was resumed: the freeze lands in one of
      // the 127 left.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (a->vgpu(0)->counters().slice_resumes == resumed && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    }
    Status frozen = a->vgpu(0)->freeze(FREEZE_NS);
    ASSERT_TRUE(frozen) << frozen.error().what();
  }

  // The output on whichever vGPU the port points at, element by element.
  void expect_computed_once() {
    std::vector<float> got(elements);
    Status read = guest.ctx->download(c, std::span<float>(got));
    ASSERT_TRUE(read) << read.error().what();
    uint32_t wrong = 0, first = 0;
    for (uint32_t i = 0; i < elements; ++i)
      if (got[i] != once && wrong++ == 0) first = i;
    EXPECT_EQ(wrong, 0u) << "element " << first << " = " << got[first] << ", not " << once;
  }
};

void move_during_launch(Launch kind) {
  SlicedMove s;
  ASSERT_NO_FATAL_FAILURE(s.start(kind));
  Result<std::vector<uint8_t>> image = s.a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  // The image holds the launch between two pieces, its fence not written.
  bool carried = false;
  for (const auto& [c, record] : records_of(*image)) {
    if (!record.run.work) continue;
    carried = true;
    auto p = gpu::decode_kernel_progress(record.run.work->state);
    ASSERT_TRUE(p) << p.error();
    const bool gemm = kind == Launch::sgemm_in_timed_pieces;
    EXPECT_EQ(p->launch.kernel, gemm ? cls::Kernel::sgemm : cls::Kernel::saxpy);
    EXPECT_EQ(p->timed, gemm);
    EXPECT_GT(p->next, 0u);
  }
  ASSERT_TRUE(carried) << "the freeze did not land inside the launch (it ended within " << INTO_LAUNCH.count()
                       << " ms?)";
  EXPECT_FALSE(s.guest.ctx->wait(s.launch, NOT_YET_NS)) << "the source wrote the fence of a launch it did not finish";

  copy_partition(*s.a, *s.b);
  Status imported = s.b->vgpu(0)->import_image(*image);
  ASSERT_TRUE(imported) << imported.error().what();
  EXPECT_EQ(s.b->vgpu(0)->counters().launches_moved_in, 1u);
  s.port.move_to(&s.b->port(0));
  Status done = s.guest.ctx->wait(s.launch);
  ASSERT_TRUE(done) << done.error().what();
  EXPECT_TRUE(s.guest.ctx->status()) << "the destination reported a channel error";
  s.expect_computed_once();
  // The channel goes on: one more fill on B.
  auto again = s.guest.ctx->fill({s.c, s.elements, s.once});
  ASSERT_TRUE(again && s.guest.ctx->wait(*again));
}

TEST(MigrationSliced, AMoveBetweenBlockSlicesOfASaxpyEndsWithEveryElementComputedOnce) {
  move_during_launch(Launch::saxpy_in_block_slices);
}

TEST(MigrationSliced, AMoveBetweenTimedPiecesOfAnSgemmEndsWithEveryElementComputedOnce) {
  move_during_launch(Launch::sgemm_in_timed_pieces);  // the default slicing: by time
}

// A progress record the destination would not run is refused by name, and
// the same destination then takes the good image and finishes the launch.
TEST(MigrationSliced, ACorruptOrOversizedProgressRecordIsRefusedAndTheGoodOneTakenAfter) {
  SlicedMove s;
  ASSERT_NO_FATAL_FAILURE(s.start(Launch::saxpy_in_block_slices));
  Result<std::vector<uint8_t>> image = s.a->vgpu(0)->export_image();
  ASSERT_TRUE(image) << image.error().what();
  gpu::WorkState good;
  for (const auto& [c, record] : records_of(*image))
    if (record.run.work) good = record.run.work->state;
  ASSERT_EQ(good.kind, gpu::KERNEL_WORK_KIND) << "the freeze did not land inside the launch";
  copy_partition(*s.a, *s.b);

  auto p = gpu::decode_kernel_progress(good);
  ASSERT_TRUE(p);
  gpu::KernelProgress past = *p;
  past.next = past.launch.blocks;
  gpu::WorkState oversized = good;
  oversized.bytes.resize(gpu::MAX_WORK_STATE_BYTES + 1);
  const struct {
    gpu::WorkState work;
    const char* why;
  } bad[] = {
      {gpu::encode_kernel_progress(past), "goes on at block 8192 of 8192"},
      {oversized, "divided work state of 4097 bytes (at most 4096)"},
  };
  for (const auto& c : bad) {
    Status refused = s.b->vgpu(0)->import_image(with_work(*image, c.work));
    ASSERT_FALSE(refused) << c.why;
    EXPECT_NE(refused.error().message.find(c.why), std::string::npos) << refused.error().message;
  }
  // An import is taken only by a vGPU with no bound channel: none was left.
  Status imported = s.b->vgpu(0)->import_image(*image);
  ASSERT_TRUE(imported) << imported.error().what();
  s.port.move_to(&s.b->port(0));
  ASSERT_TRUE(s.guest.ctx->wait(s.launch));
  s.expect_computed_once();
}

// An image of version 2 (channel records end after their objects: made
// before this build, at an entry boundary) still loads, and the chain goes
// on to the unmoved chain's output.
TEST(MigrationSliced, AVersion2ImageOfChannelsAtAnEntryBoundaryStillLoads) {
  constexpr uint32_t OLDER = IMAGE_VERSION_CURSOR - 1;
  constexpr size_t VERSION_AT = sizeof IMAGE_MAGIC;
  constexpr size_t NO_CURSOR_NO_WORK = 2;  // two false booleans end a version 3 record
  auto a = make_testbed(), b = make_testbed();
  ASSERT_TRUE(a && b);
  Result<std::vector<std::byte>> want = unmoved_output(JOBS_BEFORE + JOBS_AFTER);
  ASSERT_TRUE(want) << want.error().what();
  MovingPort port(&a->port(0));
  Chain chain;
  ASSERT_TRUE(chain.open(port));
  ASSERT_TRUE(chain.submit(JOBS_BEFORE));
  ASSERT_TRUE(chain.ctx->synchronize());  // at an entry boundary, as a version 2 image must be
  ASSERT_TRUE(a->vgpu(0)->freeze(FREEZE_NS));
  Result<std::vector<uint8_t>> bytes = a->vgpu(0)->export_image();
  ASSERT_TRUE(bytes) << bytes.error().what();
  Result<VgpuImage> image = decode_image(*bytes);
  ASSERT_TRUE(image);
  Writer w;
  const std::vector<std::pair<uint32_t, ChannelRecord>> records = records_of(*bytes);
  ASSERT_FALSE(records.empty());
  w.u32(static_cast<uint32_t>(records.size()));
  for (const auto& [c, record] : records) {
    ASSERT_FALSE(record.run.cursor || record.run.work);
    Writer one;
    encode_channel_record(record, one);
    std::vector<uint8_t> v2 = one.take();
    v2.resize(v2.size() - NO_CURSOR_NO_WORK);
    w.u32(c);
    for (uint8_t byte : v2) w.u8(byte);
  }
  for (ImageSectionBytes& sec : image->sections)
    if (sec.tag == static_cast<uint32_t>(ImageSection::channels)) sec.bytes = w.take();
  std::vector<uint8_t> older = encode_image(*image);
  older[VERSION_AT] = OLDER;
  copy_partition(*a, *b);
  // Read as version 3, the cut records are refused; as version 2 they load.
  std::vector<uint8_t> misread = older;
  misread[VERSION_AT] = IMAGE_VERSION_CURSOR;
  EXPECT_FALSE(b->vgpu(0)->import_image(misread));
  Status imported = b->vgpu(0)->import_image(older);
  ASSERT_TRUE(imported) << imported.error().what();
  port.move_to(&b->port(0));
  ASSERT_TRUE(chain.submit(JOBS_AFTER));
  Status ended = chain.ends_as(*want);
  EXPECT_TRUE(ended) << "moved by a version 2 image: " << ended.error().what();
}

}  // namespace
}  // namespace vgpu::mediator
