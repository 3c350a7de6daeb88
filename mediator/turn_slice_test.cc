// SPDX-License-Identifier: GPL-2.0-or-later
#include "mediator/turn_slice.h"

#include <gtest/gtest.h>

namespace vgpu::mediator {
namespace {

TEST(TurnSlice, ATurnCountsFromItsFirstPiece) {
  TurnSlice t(30);
  EXPECT_EQ(t.piece_ran(1, 7, 100), 100u);
  EXPECT_EQ(t.piece_ran(1, 7, 120), 100u) << "a later piece of the same turn";
  EXPECT_EQ(t.piece_ran(1, 8, 140), 140u) << "the VM's next turn";
  EXPECT_EQ(t.piece_ran(2, 8, 150), 150u) << "another VM's turn";
}

TEST(TurnSlice, ATurnGoesOnWhileItsSliceLasts) {
  TurnSlice t(30);
  EXPECT_TRUE(t.has_time(100, 129));
  EXPECT_FALSE(t.has_time(100, 130));
}

TEST(TurnSlice, ASliceOfZeroNeverGoesOn) {
  TurnSlice t(0);
  EXPECT_FALSE(t.bounded());
  EXPECT_FALSE(t.has_time(100, 100));
}

}  // namespace
}  // namespace vgpu::mediator
