// SPDX-License-Identifier: GPL-2.0-or-later
// ptx_bench: the interpreter's time for saxpy over 1M elements, a 256^3
// shared-memory tiled matmul and a 1M-element block reduction (the kernels
// of test_kernels.h), beside the same loops in plain C++. Prints JSON, then
// a table. Each kernel runs with the interpreter's fast path (docs/ptx.md)
// and without it (every instruction through the executor table), side by
// side. Not a test: numbers depend on the machine.
//   ptx_bench [--fast on|off|both] [--runs N] [--only saxpy|matmul|reduce] [--isa best|avx2|baseline]
//   (--isa: the best build of the fast path's kernels it may pick, exec_fast.h's fast_isa_limit)
//   (callgrind: one path, --runs 1, one kernel at a time for its own count)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/ptx/exec_fast.h"
#include "gpu/ptx/flat_memory.h"
#include "gpu/ptx/interpreter.h"
#include "ptx/params.h"
#include "gpu/ptx/test_kernels.h"

namespace {

using namespace vgpu::ptx;

// The kernels' memory: on host pages, as the device's is (flat_memory.h),
// handed out a page at a time.
constexpr uint64_t kBase = 0x10'0000'0000ull;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

enum class Paths { both, fast, table };
Paths g_paths = Paths::both;
int g_runs = 3;      // best of
std::string g_only;  // one kernel only (empty: all)
bool want(const char* name) { return g_only.empty() || g_only == name; }

struct Row {
  std::string name;
  double interp_ms, table_ms, native_ms;
  uint64_t warp_instructions;
  bool ok;
};

template <typename... A>
std::vector<std::byte> pack(const EntryInfo& e, A... args) {
  ParamBuffer buf(e);
  size_t i = 0;
  (buf.set(i++, args), ...);
  if (!buf.ok()) {
    std::fprintf(stderr, "ptx_bench: a parameter of the wrong size\n");
    std::exit(1);
  }
  return std::move(buf).take();
}

template <typename F>
double best_of(int n, F f) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, ms_since(t0));
  }
  return best;
}

Row run(const Module& m, FlatMemory& mem, const char* entry, Dim3 grid, Dim3 block, std::vector<std::byte> params) {
  LaunchConfig cfg;
  cfg.entry = static_cast<uint32_t>(m.find_entry(entry));
  cfg.grid = grid;
  cfg.block = block;
  cfg.params = params;
  uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  Row r{entry, 0, 0, 0, 0, true};
  const auto timed = [&](bool fast) {
    ExecControl control;
    control.fast_path = fast;
    return best_of(g_runs, [&] {
      auto s = run_blocks(m, cfg, mem, 0, blocks, {}, control);
      if (!s) {
        std::fprintf(stderr, "%s: %s\n", entry, s.error().message.c_str());
        r.ok = false;
      } else {
        r.warp_instructions = s->warp_instructions;
      }
    });
  };
  if (g_paths != Paths::table) r.interp_ms = timed(true);
  if (g_paths != Paths::fast) r.table_ms = timed(false);
  return r;
}

// The flags into the globals above; false (with the usage printed) on a bad one.
bool parse_args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--fast" && (v == "on" || v == "off" || v == "both")) {
      g_paths = v == "on" ? Paths::fast : v == "off" ? Paths::table : Paths::both;
      ++i;
      continue;
    }
    if (a == "--only" && (v == "saxpy" || v == "matmul" || v == "reduce")) {
      g_only = v;
      ++i;
      continue;
    }
    if (a == "--isa" && (v == "best" || v == "avx2" || v == "baseline")) {
      exec::fast_isa_limit() = v == "best"   ? exec::FastIsa::best
                               : v == "avx2" ? exec::FastIsa::avx2
                                             : exec::FastIsa::baseline;
      ++i;
      continue;
    }
    if (a == "--runs" && std::atoi(v.c_str()) > 0) {
      g_runs = std::atoi(v.c_str());
      ++i;
      continue;
    }
    std::fprintf(stderr,
                 "usage: ptx_bench [--fast on|off|both] [--runs N] [--only saxpy|matmul|reduce] "
                 "[--isa best|avx2|baseline]\n");
    return false;
  }
  return true;
}

volatile float g_sink = 0;  // keeps the native loops' results live

const EntryInfo& entry_info(const Module& m, const char* entry) {
  return m.entries()[static_cast<size_t>(m.find_entry(entry))];
}

Row saxpy(const Module& m, FlatMemory& mem) {  // 1M elements
  const int n = 1 << 20;
  uint64_t x = mem.alloc(n * 4), y = mem.alloc(n * 4);
  for (int i = 0; i < n; ++i) mem.at<float>(x)[i] = static_cast<float>(i), mem.at<float>(y)[i] = 1;
  const char* entry = "_Z5saxpyifPKfPf";
  Row r = run(m, mem, entry, {4096, 1, 1}, {256, 1, 1}, pack(entry_info(m, entry), n, 2.0f, x, y));
  std::vector<float> hx(n, 1.0f), hy(n, 2.0f);
  r.native_ms = best_of(g_runs, [&] {
    for (int i = 0; i < n; ++i) hy[i] = 2.0f * hx[i] + hy[i];
    g_sink = hy[n / 2];
  });
  r.name = "saxpy_1M";
  return r;
}

Row matmul(const Module& m, FlatMemory& mem) {  // 256^3, 16x16 tiles
  const int n = 256;
  uint64_t a = mem.alloc(n * n * 4), b = mem.alloc(n * n * 4), c = mem.alloc(n * n * 4);
  for (int i = 0; i < n * n; ++i) mem.at<float>(a)[i] = 1, mem.at<float>(b)[i] = 2;
  const char* entry = "_Z6matmulPKfS0_Pfi";
  Row r = run(m, mem, entry, {16, 16, 1}, {16, 16, 1}, pack(entry_info(m, entry), a, b, c, n));
  std::vector<float> ha(n * n, 1), hb(n * n, 2), hc(n * n);
  r.native_ms = best_of(g_runs, [&] {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        float acc = 0;
        for (int k = 0; k < n; ++k) acc += ha[i * n + k] * hb[k * n + j];
        hc[i * n + j] = acc;
      }
    g_sink = hc[7];
  });
  r.name = "matmul_256";
  return r;
}

Row reduce(const Module& m, FlatMemory& mem) {  // block reduction, 1M elements
  const int n = 1 << 20;
  uint64_t in = mem.alloc(n * 4), out = mem.alloc(4096 * 4);
  for (int i = 0; i < n; ++i) mem.at<float>(in)[i] = 1;
  const char* entry = "_Z6reducePKfPfi";
  Row r = run(m, mem, entry, {4096, 1, 1}, {256, 1, 1}, pack(entry_info(m, entry), in, out, n));
  std::vector<float> h(n, 1), ho(4096);
  r.native_ms = best_of(g_runs, [&] {
    for (int b = 0; b < 4096; ++b) {
      float s = 0;
      for (int i = 0; i < 256; ++i) s += h[b * 256 + i];
      ho[b] = s;
    }
    g_sink = ho[9];
  });
  r.name = "reduce_1M";
  return r;
}

void print_json(const std::vector<Row>& rows) {
  nlohmann::ordered_json j = {{"ptx_bench", nlohmann::ordered_json::array()}};
  for (const Row& r : rows)
    j["ptx_bench"].push_back({{"name", r.name},
                              {"interpreter_ms", r.interp_ms},
                              {"no_fast_path_ms", r.table_ms},
                              {"native_ms", r.native_ms},
                              {"warp_instructions", r.warp_instructions},
                              {"ok", r.ok}});
  std::printf("%s\n", j.dump(1).c_str());
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\n%-12s %14s %14s %12s %10s %16s %12s\n", "kernel", "interpreter ms", "no fast path", "native ms",
              "ratio", "warp instrs", "ns/warp ins");
  for (auto& r : rows)
    std::printf("%-12s %14.2f %14.2f %12.3f %10.0f %16llu %12.1f\n", r.name.c_str(), r.interp_ms, r.table_ms,
                r.native_ms, r.interp_ms / std::max(r.native_ms, 1e-6),
                static_cast<unsigned long long>(r.warp_instructions),
                r.interp_ms * 1e6 / static_cast<double>(std::max<uint64_t>(r.warp_instructions, 1)));
}

}  // namespace

int main(int argc, char** argv) {
  if (!parse_args(argc, argv)) return 2;
  auto parsed = parse_module(vgpu::ptx::testing::kKernels);
  if (!parsed) {
    std::fprintf(stderr, "parse: %s\n", parsed.error().message.c_str());
    return 1;
  }
  const Module& m = **parsed;
  FlatMemory mem(kBase, 64u << 20, FlatMemory::HOST_PAGE);
  std::vector<Row> rows;
  if (want("saxpy")) rows.push_back(saxpy(m, mem));
  if (want("matmul")) rows.push_back(matmul(m, mem));
  if (want("reduce")) rows.push_back(reduce(m, mem));
  print_json(rows);
  print_table(rows);
  for (auto& r : rows)
    if (!r.ok) return 1;
  return 0;
}
