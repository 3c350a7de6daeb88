// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/engines/method_table.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gpu/engines/compute_object.h"
#include "gpu/engines/copy_object.h"

namespace vgpu::gpu {
namespace {

// The reference: the first record of the table that covers the method.
template <typename Object>
const MethodRecord<Object>* walk(std::span<const MethodRecord<Object>> table, uint32_t mthd) {
  auto it = std::ranges::find_if(table, [mthd](const MethodRecord<Object>& r) { return r.covers(mthd); });
  return it == table.end() ? nullptr : &*it;
}

// Every method word, aligned or not, inside and around the table: the
// index names the record the table's own walk finds, or none.
template <typename Object>
void index_agrees_with_the_walk() {
  const auto table = Object::methods();
  const MethodIndex<Object> index(table);
  uint32_t end = 0;
  for (const auto& r : table) end = std::max(end, r.offset + r.words * static_cast<uint32_t>(sizeof(uint32_t)));
  size_t found = 0;
  for (uint32_t mthd = 0; mthd < end + 64; ++mthd) {
    const auto* walked = walk(table, mthd);
    ASSERT_EQ(index.find(mthd), walked) << "method " << mthd;
    found += walked != nullptr;
  }
  size_t words = 0;
  for (const auto& r : table) words += r.words;
  EXPECT_EQ(found, words);
  EXPECT_EQ(index.find(~uint32_t{0} & ~3u), nullptr);
}

TEST(MethodIndex, ComputeTableAgreesWithItsWalk) { index_agrees_with_the_walk<ComputeObject>(); }
TEST(MethodIndex, CopyTableAgreesWithItsWalk) { index_agrees_with_the_walk<CopyObject>(); }

// PFIFO looks for a fence the GPU may write only after these methods.
TEST(MethodIndex, OnlyTheLaunchAndLoadMethodsStartWork) {
  const ComputeObject compute;
  const CopyObject copy;
  for (const auto& r : ComputeObject::methods())
    EXPECT_EQ(compute.may_start_work(r.offset), r.offset == cls::compute::LAUNCH ||
                                                    r.offset == cls::compute::LOAD_MODULE ||
                                                    r.offset == cls::compute::LAUNCH_USER)
        << r.name;
  for (const auto& r : CopyObject::methods())
    EXPECT_EQ(copy.may_start_work(r.offset), r.offset == cls::copy::LAUNCH_DMA) << r.name;
  EXPECT_FALSE(compute.may_start_work(cls::compute::LAUNCH + 1));  // not a method word
}

TEST(MethodIndex, EmptyTableFindsNothing) {
  const MethodIndex<CopyObject> index(std::span<const MethodRecord<CopyObject>>{});
  EXPECT_EQ(index.find(0), nullptr);
  EXPECT_EQ(index.find(0x100), nullptr);
}

}  // namespace
}  // namespace vgpu::gpu
