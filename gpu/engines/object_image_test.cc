// SPDX-License-Identifier: GPL-2.0-or-later
// Class objects in the migration image (object_image.cc): state latched on
// one object, saved and restored into a new one, runs the same work there.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/wire_codec.h"
#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"
#include "gpu/engines/engine_limits.h"
#include "gpu/engines/testing/compute_launch.h"
#include "gpu/engines/testing/copy_methods.h"

namespace vgpu::gpu {
namespace {

using testing::Method;
class ObjectImageTest : public testing::ComputeLaunchEnv {
 protected:
  static constexpr uint64_t DST_VA = LINEAR_VA + 0x10000;
  static constexpr uint32_t ELEMENTS = 1000;
  static constexpr float VALUE = 2.5f;
  static constexpr uint32_t GRID = 4;  // blocks: enough for ELEMENTS

  // Every state method of a fill launch of ELEMENTS floats at DST_VA, up
  // to (not including) LAUNCH.
  static std::vector<Method> fill_state() {
    std::vector<Method> m = program_and_args(cls::FillArgs{DST_VA, ELEMENTS, VALUE});
    testing::append(m, grid(GRID));
    return m;
  }
};

TEST_F(ObjectImageTest, AComputeObjectsStateMovesAndItsLaunchRunsThere) {
  write_program(static_cast<uint32_t>(cls::Kernel::fill));
  write_vec(DST_VA, std::vector<float>(ELEMENTS + 1, 0.0f));
  ComputeObject source;
  ASSERT_TRUE(send(source, fill_state()).has_value());
  const auto saved = source.save_state();
  ASSERT_TRUE(saved.has_value());

  ComputeObject moved;
  ASSERT_TRUE(moved.restore_state(*saved));
  EXPECT_EQ(moved.save_state(), saved);
  ASSERT_TRUE(send(moved, {{cls::compute::LAUNCH, 0}}).has_value());
  const auto out = read_vec<float>(DST_VA, ELEMENTS + 1);
  for (size_t i = 0; i < ELEMENTS; ++i) ASSERT_EQ(out[i], VALUE) << i;
  EXPECT_EQ(out[ELEMENTS], 0.0f);
}

TEST_F(ObjectImageTest, ACopyObjectsStateMovesAndItsCopyRunsThere) {
  using namespace cls::copy;
  const uint64_t src = LINEAR_VA + 0x123, dst = LINEAR_VA + 0x20007;
  const auto data = testing::pattern(5000, 3);
  write_vec(src, data);
  CopyObject source;
  ASSERT_TRUE(send(source, testing::copy_lines(src, dst, 5000, 1, 5000, 5000)).has_value());
  const auto saved = source.save_state();
  ASSERT_TRUE(saved.has_value());
  CopyObject moved;
  ASSERT_TRUE(moved.restore_state(*saved));
  ASSERT_TRUE(send(moved, {{LAUNCH_DMA, testing::COPY_LINEAR}}).has_value());
  EXPECT_EQ(read_vec<uint8_t>(dst, data.size()), data);
}

TEST_F(ObjectImageTest, CutOrLongStateIsRefusedAndChangesNothing) {
  CopyObject copy;
  ASSERT_TRUE(send(copy, {{cls::copy::LINE_COUNT, 7}}).has_value());
  std::vector<uint8_t> saved = *copy.save_state();
  CopyObject other;
  for (size_t n = 0; n < saved.size(); ++n)
    EXPECT_FALSE(other.restore_state(std::span(saved).first(n))) << n << " bytes";
  saved.push_back(0);
  EXPECT_FALSE(other.restore_state(saved));
  EXPECT_EQ(other.state().line_count, 0u);

  ComputeObject compute;
  const std::vector<uint8_t> whole = *compute.save_state();
  // Image version 1's state ends before the module table (its sequence
  // word and a flag per slot): that cut is a whole state with no modules.
  const size_t v1 = whole.size() - sizeof(uint32_t) - cls::compute::MAX_MODULE_SLOTS;
  for (size_t n = 0; n < whole.size(); ++n) EXPECT_EQ(compute.restore_state(std::span(whole).first(n)), n == v1) << n;
}

// The module table's texts are parsed again: one this device refuses, an
// empty one and one longer than a module may be are each refused.
TEST_F(ObjectImageTest, AModuleTextTheDeviceWouldNotLoadIsRefused) {
  ComputeObject fresh;
  const std::vector<uint8_t> base = *fresh.save_state();
  const size_t table = base.size() - sizeof(uint32_t) - cls::compute::MAX_MODULE_SLOTS;
  auto with_text = [&](const std::string& text) {
    std::vector<uint8_t> out(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(table));
    Writer t;
    t.u32(0);  // report sequence
    t.boolean(true);
    t.u64(0x100000);  // data VA
    t.text(text);
    for (uint32_t s = 1; s < cls::compute::MAX_MODULE_SLOTS; ++s) t.boolean(false);
    const std::vector<uint8_t> tail = t.take();
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  };
  ComputeObject moved;
  EXPECT_FALSE(moved.restore_state(with_text("frobnicate.u32 %r1;")));
  EXPECT_FALSE(moved.restore_state(with_text("")));
  EXPECT_FALSE(moved.restore_state(with_text(std::string(cls::compute::MAX_MODULE_BYTES + 1, ' '))));
  EXPECT_TRUE(moved.restore_state(base)) << "the state with an empty table";
}

// Values no method could latch: a grid dimension wider than its field, an
// unbound constant buffer with an address, a bound one past 40 bits or
// with a size wider than CbSize.
TEST_F(ObjectImageTest, ComputeStateNoMethodCouldLatchIsRefused) {
  ComputeObject fresh;
  const std::vector<uint8_t> base = *fresh.save_state();
  constexpr size_t GRID_Y = 4 * sizeof(uint32_t);  // after program_region_a/b, program_start, grid.x
  constexpr size_t CB0 = 26 * sizeof(uint32_t);    // the first binding, after the scalar words
  constexpr size_t CB_BYTES = sizeof(uint64_t) + sizeof(uint32_t) + 1;
  auto with = [&](size_t at, const void* v, size_t n) {
    std::vector<uint8_t> b = base;
    std::memcpy(b.data() + at, v, n);
    return b;
  };
  const uint32_t wide = cls::compute::DimHi::max + 1;
  const uint64_t va = 0x1000, far = uint64_t{1} << 40;
  const uint32_t size_over = cls::compute::CbSize::max + 1;
  const uint8_t valid = 1;
  ASSERT_TRUE(fresh.restore_state(base));
  EXPECT_FALSE(fresh.restore_state(with(GRID_Y, &wide, sizeof wide)));
  EXPECT_FALSE(fresh.restore_state(with(CB0, &va, sizeof va)));               // unbound, with an address
  const std::vector<uint8_t> accepted = with(CB0 + CB_BYTES - 1, &valid, 1);  // bound at VA 0, size 0
  ASSERT_TRUE(fresh.restore_state(accepted));
  std::vector<uint8_t> bound = accepted;
  std::memcpy(bound.data() + CB0, &far, sizeof far);
  EXPECT_FALSE(fresh.restore_state(bound));
  std::memcpy(bound.data() + CB0, &va, sizeof va);
  std::memcpy(bound.data() + CB0 + sizeof va, &size_over, sizeof size_over);
  EXPECT_FALSE(fresh.restore_state(bound));
  EXPECT_EQ(fresh.save_state(), accepted);  // the refusals changed nothing
}

}  // namespace
}  // namespace vgpu::gpu
