// SPDX-License-Identifier: GPL-2.0-or-later
// What migration's dirty log of VRAM costs (docs/migration.md §5): a mark
// with logging off and on (a page already marked, a page not yet marked),
// Vram::write32 with logging off and on, a 64 MiB range, and a take of a
// 1 GiB partition full and empty. Prints a table and, with --json, writes
// the same figures. Usage: dirty_log_bench [--json PATH] [--repeats N]
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gpu/mem/dirty_log.h"
#include "gpu/mem/vram.h"
#include "vgpu/bits.h"

namespace {

using vgpu::GiB;
using vgpu::MiB;
using vgpu::gpu::DirtyLog;

constexpr uint64_t LOG_BYTES = 4 * GiB;  // the host's VRAM by default
constexpr uint64_t PARTITION = 1 * GiB;
constexpr uint64_t RANGE = 64 * MiB;
constexpr uint64_t FENCE_BYTES = 16;
constexpr uint64_t CALLS = 20'000'000;
constexpr uint64_t VRAM_BYTES = 64 * MiB;

struct Figure {
  std::string name;
  double value;
  const char* unit;
};

// The best of `repeats` runs of body(), in ns per `per` operations.
template <typename Body>
double best_ns(int repeats, uint64_t per, Body&& body) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(per));
  }
  return best;
}

std::vector<Figure> measure(int repeats) {
  std::vector<Figure> out;
  DirtyLog log(LOG_BYTES);
  std::vector<uint64_t> bitmap(PARTITION / DirtyLog::PAGE / DirtyLog::PAGES_PER_WORD);
  volatile uint64_t sink = 0;

  out.push_back({"mark_off_ns",
                 best_ns(repeats, CALLS,
                         [&] {
                           for (uint64_t i = 0; i < CALLS; ++i) log.mark((i * FENCE_BYTES) % PARTITION, FENCE_BYTES);
                         }),
                 "ns"});
  log.start();
  out.push_back({"mark_marked_page_ns",
                 best_ns(repeats, CALLS,
                         [&] {
                           for (uint64_t i = 0; i < CALLS; ++i) log.mark((i % 256) * FENCE_BYTES, FENCE_BYTES);
                         }),
                 "ns"});
  const uint64_t pages = PARTITION / DirtyLog::PAGE;
  out.push_back({"mark_new_page_ns",
                 best_ns(repeats, pages,
                         [&] {
                           (void)log.take(0, PARTITION, bitmap);  // every page clear again: one take (~25 us) per run
                           for (uint64_t p = 0; p < pages; ++p) log.mark(p * DirtyLog::PAGE, FENCE_BYTES);
                         }),
                 "ns"});
  // A 64 MiB copy's mark, its pages already marked (after the first run).
  out.push_back({"mark_64MiB_range_us", best_ns(repeats, 1000, [&] { log.mark(RANGE, RANGE); }), "us"});
  log.mark(0, PARTITION);
  out.push_back(
      {"take_1GiB_all_marked_us", best_ns(1, 1000, [&] { sink = sink + log.take(0, PARTITION, bitmap); }), "us"});
  out.push_back({"take_1GiB_none_marked_us",
                 best_ns(repeats, 1000, [&] { sink = sink + log.take(0, PARTITION, bitmap); }), "us"});
  log.stop();

  auto vram = vgpu::gpu::Vram::create(VRAM_BYTES);
  if (!vram) return out;
  auto writes = [&] {
    for (uint64_t i = 0; i < CALLS; ++i)
      (void)(*vram)->write32((i * FENCE_BYTES) % VRAM_BYTES, static_cast<uint32_t>(i));
  };
  out.push_back({"vram_write32_off_ns", best_ns(repeats, CALLS, writes), "ns"});
  (*vram)->dirty_log().start();
  out.push_back({"vram_write32_on_ns", best_ns(repeats, CALLS, writes), "ns"});
  (*vram)->dirty_log().stop();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The cost of migration's VRAM dirty log"};
  std::string json;
  int repeats = 5;
  app.add_option("--json", json, "write the figures to this file as JSON");
  app.add_option("--repeats", repeats, "runs of each measurement; the best is kept")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  const std::vector<Figure> figures = measure(repeats);
  std::printf("%-28s %12s\n", "figure", "value");
  for (const Figure& f : figures) std::printf("%-28s %9.3f %s\n", f.name.c_str(), f.value, f.unit);
  if (!json.empty()) {
    nlohmann::ordered_json j{{"bench", "dirty_log"}, {"repeats", repeats}};
    for (const Figure& f : figures) j[f.name] = f.value;
    std::ofstream out(json);
    out << j.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "dirty_log_bench: cannot write %s\n", json.c_str());
      return 1;
    }
  }
  return 0;
}
