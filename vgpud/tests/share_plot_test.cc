// SPDX-License-Identifier: GPL-2.0-or-later
// vgpuctl plot's figures: window, rolling and target shares; gaps for idle
// windows; the gnuplot script's title, legend and margin.
#include "vgpud/share_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace vgpu::vgpud::share_plot;

constexpr uint64_t MS = 1'000'000;

Sample sample(uint64_t t_ms, uint64_t a_ms, uint64_t b_ms) {
  Sample s;
  s.t_ns = t_ms * MS;
  s.scheduler = "band";
  s.vms["a"] = VmSample{a_ms * MS, 10};
  s.vms["b"] = VmSample{b_ms * MS, 30};
  return s;
}

TEST(SharePlot, ParsesTheDaemonsSharesAnswer) {
  auto s = parse_shares("1500 band\nweb1 200 10\nweb2 300 30\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->t_ns, 1500u);
  EXPECT_EQ(s->scheduler, "band");
  ASSERT_EQ(s->vms.size(), 2u);
  EXPECT_EQ(s->vms["web2"].gpu_ns, 300u);
  EXPECT_EQ(s->vms["web2"].weight, 30u);
  EXPECT_FALSE(parse_shares("error: unknown command\n"));
  EXPECT_FALSE(parse_shares("1500 band\nweb1 x 10\n"));
}

TEST(SharePlot, RollingShareIsGpuTimeOverGpuTimeAndTargetComesFromWeights) {
  // Window 1: a 100 ms, b 0; window 2: a 0, b 300 ms (the barcode the
  // 250 ms windows alone draw); over both, a has 100 of 400 ms.
  const Figures f = reduce({sample(0, 0, 0), sample(250, 100, 0), sample(500, 100, 300)}, 2);
  ASSERT_EQ(f.vms.size(), 2u);
  ASSERT_EQ(f.t_s.size(), 2u);
  EXPECT_DOUBLE_EQ(f.t_s[1], 0.5);
  const Series &a = f.vms[0], &b = f.vms[1];
  EXPECT_DOUBLE_EQ(a.window[0], 1.0);
  EXPECT_DOUBLE_EQ(a.window[1], 0.0);
  EXPECT_DOUBLE_EQ(a.rolling[1], 0.25);
  EXPECT_DOUBLE_EQ(b.rolling[1], 0.75);
  // Only a used the GPU in the first span: its target is all of it, b has none.
  EXPECT_DOUBLE_EQ(a.target[0], 1.0);
  EXPECT_TRUE(std::isnan(b.target[0]));
  EXPECT_DOUBLE_EQ(a.target[1], 0.25);
  EXPECT_DOUBLE_EQ(b.target[1], 0.75);
  EXPECT_DOUBLE_EQ(a.run_share, 0.25);
  EXPECT_EQ(f.weight_sum, 40u);
  EXPECT_EQ(f.scheduler, "band");
}

TEST(SharePlot, IdleWindowsAreGapsNotZeros) {
  const Figures f = reduce({sample(0, 0, 0), sample(250, 0, 0), sample(500, 50, 50)}, 1);
  EXPECT_TRUE(std::isnan(f.vms[0].window[0]));
  EXPECT_TRUE(std::isnan(f.vms[0].rolling[0]));
  EXPECT_TRUE(std::isnan(f.vms[0].target[0]));
  EXPECT_DOUBLE_EQ(f.vms[0].window[1], 0.5);
  const std::string dat = data_file(f);
  EXPECT_NE(dat.find("0.250 NaN NaN NaN NaN NaN NaN\n"), std::string::npos) << dat;
}

TEST(SharePlot, AVmThatLeftIsAGapFromThen) {
  Sample gone = sample(500, 100, 100);
  gone.vms.erase("b");
  const Figures f = reduce({sample(0, 0, 0), sample(250, 100, 100), gone}, 4);
  EXPECT_DOUBLE_EQ(f.vms[1].window[0], 0.5);
  EXPECT_TRUE(std::isnan(f.vms[1].window[1]));
  EXPECT_TRUE(std::isnan(f.vms[1].rolling[1]));
}

TEST(SharePlot, ScriptHasTheSchedulerWeightsTargetsAndAMargin) {
  const Figures f = reduce({sample(0, 0, 0), sample(250, 100, 300)}, 8);
  const std::string g = gnuplot_script(f, "/tmp/x.dat", "/tmp/x.png", 0.25);
  EXPECT_NE(g.find("vgpud scheduler band; weights a 10, b 30"), std::string::npos) << g;
  EXPECT_NE(g.find("share over the last 2.0 s"), std::string::npos) << g;
  EXPECT_NE(g.find("set yrange [-0.05:1.05]"), std::string::npos) << g;
  EXPECT_NE(g.find("'a (weight 10): 0.250 over the run'"), std::string::npos) << g;
  EXPECT_NE(g.find("'b target, every VM busy: 30/40 = 0.750'"), std::string::npos) << g;
  EXPECT_NE(g.find("dt 2"), std::string::npos) << g;
}

}  // namespace
