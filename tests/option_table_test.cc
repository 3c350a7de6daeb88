// SPDX-License-Identifier: GPL-2.0-or-later
// The option table (vgpu/option_table.h) against every front end that
// derives from it: for each row and each probe value (the bounds, one
// past them, 0, the default, the row's word, malformed text), vgpud's
// flags, the C API's config and the benches' flags accept what the table
// accepts, with the same value, and refuse what it refuses, with the same
// message. QEMU's properties: their numbers go through the C API (below)
// and scripts/qemu-device-test checks the real QEMU's help and refusals.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/workloads/args.h"
#include "capi/vgpu_capi.h"
#include "scheduler/policy.h"
#include "vgpu/option_table.h"
#include "vgpud/options.h"

namespace vgpu {
namespace {

struct Outcome {
  bool accepted;
  uint64_t value;       // accepted: as the front end stores it
  std::string message;  // refused: why

  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << (o.accepted ? "accepted " + std::to_string(o.value) : "refused: " + o.message);
}

Outcome by_table(const VgpuOption& o, const std::string& text) {
  uint64_t v = 0;
  char err[256] = "";
  if (!vgpu_option_parse(&o, text.c_str(), &v, err, sizeof err)) return {false, 0, err};
  return {true, v, ""};
}

// The probes: numbers at and past the bounds, 0, the default, the word,
// and text no number or boolean reads as. (A missing value is each
// parser's own syntax error, "--turn-ms: 1 required MS missing".)
std::vector<std::string> probes(const VgpuOption& o) {
  std::vector<std::string> p = {"7abc", "-1", "on", "off", "yes", "auto", o.dflt_text};
  if (o.type == VGPU_OPTION_COUNT || o.type == VGPU_OPTION_SIZE) {
    const std::string unit = o.type == VGPU_OPTION_SIZE ? "M" : "";
    for (uint64_t v : {o.min, o.max, o.max + 1, uint64_t{0}}) p.push_back(std::to_string(v) + unit);
    if (o.min > 0) p.push_back(std::to_string(o.min - 1) + unit);
  }
  if (o.choices != nullptr) p.push_back("band");
  return p;
}

// vgpud: the rows it has as flags, and where each lands in its config.
const std::map<std::string, std::function<uint64_t(const vgpud::CommandLine&)>>& vgpud_rows() {
  static const std::map<std::string, std::function<uint64_t(const vgpud::CommandLine&)>> rows = {
      {VGPU_OPT_TURN_MS, [](const vgpud::CommandLine& c) { return c.config.turn_ms; }},
      {VGPU_OPT_MAX_GPU_MS, [](const vgpud::CommandLine& c) { return c.config.max_gpu_ms; }},
      {VGPU_OPT_SLICE_BLOCKS, [](const vgpud::CommandLine& c) { return c.config.slice_blocks; }},
      {VGPU_OPT_WATCHDOG_MS, [](const vgpud::CommandLine& c) { return c.config.watchdog_ms; }},
      {VGPU_OPT_RING_AHEAD, [](const vgpud::CommandLine& c) { return c.config.ring_ahead; }},
      {VGPU_OPT_SCHEDULER, [](const vgpud::CommandLine&) { return uint64_t{0}; }},
      {VGPU_OPT_WORKER_DEVICE, [](const vgpud::CommandLine&) { return uint64_t{0}; }},
      {VGPU_OPT_WORKER_BINARY, [](const vgpud::CommandLine&) { return uint64_t{0}; }},
      {VGPU_OPT_BACKEND, [](const vgpud::CommandLine&) { return uint64_t{0}; }},
  };
  return rows;
}

Outcome by_vgpud(const VgpuOption& o, const std::string& text) {
  std::vector<std::string> args = {"--socket", "/tmp/s", std::string("--") + o.name + "=" + text};
  // --worker-device and --worker-binary go with --backend cuda (vgpud
  // refuses them alone).
  if (std::string(o.name) == VGPU_OPT_WORKER_DEVICE || std::string(o.name) == VGPU_OPT_WORKER_BINARY)
    args.insert(args.end(), {"--backend", "cuda"});
  auto cl = vgpud::parse_command_line(args);
  if (!cl) return {false, 0, cl.error().message};
  return {true, vgpud_rows().at(o.name)(*cl), ""};
}

// The C API takes numbers: each numeric row's field, the device in fv.
const std::map<std::string, std::function<void(VgpuBackendConfig&, uint64_t)>>& capi_rows() {
  static const std::map<std::string, std::function<void(VgpuBackendConfig&, uint64_t)>> rows = {
      {VGPU_OPT_VRAM, [](VgpuBackendConfig& c, uint64_t v) { c.vram_bytes = v * MiB; }},
      {VGPU_OPT_CHANNELS, [](VgpuBackendConfig& c, uint64_t v) { c.channels = static_cast<uint32_t>(v); }},
      {VGPU_OPT_WEIGHT, [](VgpuBackendConfig& c, uint64_t v) { c.weight = static_cast<uint32_t>(v); }},
      {VGPU_OPT_TURN_MS, [](VgpuBackendConfig& c, uint64_t v) { c.turn_ms = static_cast<uint32_t>(v); }},
      {VGPU_OPT_MAX_GPU_MS, [](VgpuBackendConfig& c, uint64_t v) { c.max_gpu_ms = static_cast<uint32_t>(v); }},
      {VGPU_OPT_SLICE_BLOCKS, [](VgpuBackendConfig& c, uint64_t v) { c.slice_blocks = static_cast<uint32_t>(v); }},
      {VGPU_OPT_WATCHDOG_MS, [](VgpuBackendConfig& c, uint64_t v) { c.watchdog_ms = static_cast<uint32_t>(v); }},
      {VGPU_OPT_DAEMON_TIMEOUT_MS,
       [](VgpuBackendConfig& c, uint64_t v) { c.daemon_timeout_ms = static_cast<uint32_t>(v); }},
  };
  return rows;
}

// What the C API says of a number: accepted (a backend is made) or the
// check's message. The table's side: vgpu_option_check.
Outcome by_capi(const VgpuOption& o, uint64_t value) {
  VgpuBackendConfig c;
  vgpu_backend_config_init(&c);
  c.mode = VGPU_MODE_FV;
  c.vram_bytes = 64 * MiB;
  capi_rows().at(o.name)(c, value);
  char err[256] = "";
  VgpuBackend* b = vgpu_backend_create(&c, err, sizeof err);
  vgpu_backend_destroy(b);
  return b ? Outcome{true, value, ""} : Outcome{false, 0, err};
}

Outcome by_check(const VgpuOption& o, uint64_t value) {
  char err[256] = "";
  return vgpu_option_check(&o, value, err, sizeof err) ? Outcome{true, value, ""} : Outcome{false, 0, err};
}

// The benches' flags: option_flag, which every bench's table flag is.
Outcome by_bench(const VgpuOption& o, const std::string& text) {
  uint64_t v = 0;
  const Status s = bench::option_flag(o.name, v)(text);
  if (!s) return {false, 0, s.error().message};
  return {true, v, ""};
}

TEST(OptionTable, EveryRowIsWhole) {
  for (size_t i = 0; i < vgpu_option_row_count; ++i) {
    const VgpuOption& o = vgpu_option_rows[i];
    EXPECT_EQ(vgpu_option_find(o.name), &o) << o.name << " is named once";
    EXPECT_GT(std::string(o.help).size(), 10u) << o.name;
    EXPECT_NE(o.dflt_text, nullptr) << o.name;
    if (o.type == VGPU_OPTION_COUNT || o.type == VGPU_OPTION_SIZE || o.type == VGPU_OPTION_BOOL) {
      EXPECT_LE(o.min, o.max) << o.name;
      EXPECT_EQ(by_table(o, o.dflt_text), (Outcome{true, o.dflt, ""})) << o.name << ": the default is a value";
    }
    if (o.zero != nullptr) {
      EXPECT_TRUE(by_table(o, "0").accepted) << o.name << ": 0 means " << o.zero;
    }
  }
  EXPECT_EQ(std::string(vgpu_option_find(VGPU_OPT_SCHEDULER)->choices), sched::policy_names());
}

// One spelling of a boolean: on|off, nothing else.
TEST(OptionTable, BooleansAreOnOrOff) {
  for (size_t i = 0; i < vgpu_option_row_count; ++i) {
    const VgpuOption& o = vgpu_option_rows[i];
    if (o.type != VGPU_OPTION_BOOL) continue;
    EXPECT_EQ(by_table(o, "on"), (Outcome{true, 1, ""})) << o.name;
    EXPECT_EQ(by_table(o, "off"), (Outcome{true, 0, ""})) << o.name;
    for (const char* other : {"yes", "no", "true", "1"})
      EXPECT_EQ(by_table(o, other).message, std::string(o.name) + ": '" + other + "' is not on or off");
  }
}

TEST(OptionTable, VgpudAcceptsAndRefusesAsTheTable) {
  for (const auto& [name, get] : vgpud_rows()) {
    const VgpuOption& o = *vgpu_option_find(name.c_str());
    for (const std::string& text : probes(o)) {
      const Outcome want = by_table(o, text);
      const Outcome got = by_vgpud(o, text);
      EXPECT_EQ(got, want) << "vgpud --" << name << "=" << text;
    }
  }
}

TEST(OptionTable, CapiAcceptsAndRefusesAsTheTable) {
  for (const auto& [name, set] : capi_rows()) {
    const VgpuOption& o = *vgpu_option_find(name.c_str());
    std::vector<uint64_t> values = {o.min, o.max, o.max + 1, o.dflt};
    if (o.min > 0) values.push_back(o.min - 1);
    if (o.word != nullptr) values.push_back(o.word_value);
    for (uint64_t v : values) EXPECT_EQ(by_capi(o, v), by_check(o, v)) << "C API " << name << " = " << v;
  }
}

TEST(OptionTable, BenchFlagsAcceptAndRefuseAsTheTable) {
  for (const char* name : {VGPU_OPT_TURN_MS, VGPU_OPT_RING_AHEAD, VGPU_OPT_SLICE_BLOCKS}) {
    const VgpuOption& o = *vgpu_option_find(name);
    for (const std::string& text : probes(o)) EXPECT_EQ(by_bench(o, text), by_table(o, text)) << name << "=" << text;
  }
  auto list = bench::parse_option_list(VGPU_OPT_SLICE_BLOCKS, "auto,0,16");
  ASSERT_TRUE(list);
  EXPECT_EQ(*list, (std::vector<uint32_t>{VGPU_OPT_SLICE_BLOCKS_AUTO, 0, 16}));
}

// One message for one value, whichever front end: turn-ms over its
// maximum in each.
TEST(OptionTable, TurnMsOverItsMaximumReadsTheSameEverywhere) {
  const VgpuOption& o = *vgpu_option_find(VGPU_OPT_TURN_MS);
  const std::string message = "turn-ms: 1001 ms is above the maximum 1000 ms";
  EXPECT_EQ(by_table(o, "1001").message, message);
  EXPECT_EQ(by_vgpud(o, "1001").message, message);
  EXPECT_EQ(by_capi(o, 1001).message, message);
  EXPECT_EQ(by_bench(o, "1001").message, message);
}

// The help every front end prints: the row's text with its bounds and
// what 0 means.
TEST(OptionTable, HelpCarriesTheBoundsAndWhatZeroMeans) {
  const std::string help = vgpu_option_help(vgpu_option_find(VGPU_OPT_TURN_MS));
  EXPECT_NE(help.find("0 to 1000 ms"), std::string::npos) << help;
  EXPECT_NE(help.find("(0: a turn runs every entry up to GP_PUT)"), std::string::npos) << help;
  std::string usage;  // vgpud --help, its folds undone
  for (char c : vgpud::usage())
    if (!std::isspace(static_cast<unsigned char>(c)) || (!usage.empty() && usage.back() != ' '))
      usage += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  for (const auto& [name, get] : vgpud_rows()) {
    const std::string line = vgpu_option_help(vgpu_option_find(name.c_str()));
    EXPECT_NE(usage.find(line), std::string::npos) << name << ": " << line;
  }
}

}  // namespace
}  // namespace vgpu
