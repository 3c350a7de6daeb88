// SPDX-License-Identifier: GPL-2.0-or-later
#include "scheduler/policy.h"

#include <gtest/gtest.h>

namespace vgpu::sched {
namespace {

TEST(MakePolicy, KnowsTheThreeNames) {
  for (const char* n : {"fifo", "credit", "band"}) {
    auto p = make_policy(n);
    ASSERT_TRUE(p) << n;
    EXPECT_EQ((*p)->name(), n);
  }
}

TEST(MakePolicy, UnknownNameIsAnErrorNamingIt) {
  auto p = make_policy("lottery");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, Errc::invalid_argument);
  EXPECT_NE(p.error().message.find("'lottery'"), std::string::npos);
}

TEST(MakePolicy, ZeroPeriodIsRejected) {
  auto p = make_policy("band", PolicyParams{.period_ns = 0});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, Errc::invalid_argument);
}

TEST(Policy, ZeroWeightIsRejectedNamingTheVm) {
  auto p = make_policy("credit");
  auto st = (*p)->add_vm(7, 0);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("vm 7"), std::string::npos);
}

TEST(Policy, DuplicateVmIsRejected) {
  auto p = make_policy("fifo");
  ASSERT_TRUE((*p)->add_vm(1, 1));
  EXPECT_FALSE((*p)->add_vm(1, 2));
}

TEST(Policy, ArrivalFromUnknownVmIsNotFound) {
  auto p = make_policy("band");
  auto st = (*p)->arrive(Submission{.vm = 3}, 0);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::not_found);
}

TEST(Policy, RemovingAVmDropsItsQueuedWork) {
  auto p = make_policy("credit");
  ASSERT_TRUE((*p)->add_vm(1, 1));
  ASSERT_TRUE((*p)->arrive(Submission{.vm = 1}, 0));
  ASSERT_TRUE((*p)->remove_vm(1));
  EXPECT_FALSE((*p)->pick(0).dispatch);
}

TEST(Policy, CompletionChargesTheMakespanToTheVm) {
  auto p = make_policy("fifo");
  ASSERT_TRUE((*p)->add_vm(1, 1));
  (*p)->complete(1, 1000, 4000);
  (*p)->complete(1, 5000, 5500);
  EXPECT_EQ((*p)->gpu_ns(1), 3500u);
}

TEST(Policy, NothingQueuedMeansNoDispatchAndNoRetry) {
  for (const char* n : {"fifo", "credit", "band"}) {
    auto p = make_policy(n);
    ASSERT_TRUE((*p)->add_vm(1, 1));
    const Decision d = (*p)->pick(0);
    EXPECT_FALSE(d.dispatch) << n;
    EXPECT_FALSE(d.retry_at_ns) << n;
  }
}

}  // namespace
}  // namespace vgpu::sched
