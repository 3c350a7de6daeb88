// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-bench ptx: user kernels (PTX, docs/spec/vgpu.md §10.6) through the
// whole stack, per mode, beside the built-in kernels doing the same work:
//   module load: a text the device has not seen (parsed) and the same text
//                again in a new context (from the device's module cache);
//   launch:      launch-to-fence of a one-thread user kernel beside a
//                one-element built-in fill, p50 and p99;
//   saxpy 1M, sgemm 256^3 (a tiled shared-memory kernel), a sum of 1M:
//                the user kernel, the built-in kernel, the host's own loop.
//   ptx [--modes LIST] [--runs N] [--json FILE]
// The user kernels are bench/workloads/ptx_bench_kernels.cu, compiled to
// PTX by clang-14 at build time (VGPU_BENCH_PTX).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/workloads/json_file.h"
#include "common/read_file.h"
#include "bench/workloads/args.h"
#include "bench/workloads/commands.h"
#include "common/text.h"
#include "ptx/module.h"
#include "ptx/params.h"
#include "pv-driver/pv_page_tables.h"

namespace vgpu::bench {
namespace {

using testbed::Mode;
using Clock = std::chrono::steady_clock;

constexpr uint32_t SAXPY_N = 1u << 20;
constexpr uint32_t GEMM_N = 256;
constexpr uint32_t SUM_N = 1u << 20;
constexpr uint32_t BLOCK = 256;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Row {
  std::string name;
  double user = 0, builtin = 0, host = 0;  // ms (launch: us); 0: none
  std::string unit = "ms";
};

struct ModeResult {
  Mode mode;
  std::vector<Row> rows;
};

// A parameter buffer in an entry's layout.
// A parameter buffer packed at the entry's offsets (ptx/params.h).
ptx::ParamBuffer Params(const ptx::Module& m, std::string_view entry) {
  return ptx::ParamBuffer(m.entries()[static_cast<size_t>(m.find_entry(entry))]);
}

struct Bench {
  driver::Context& ctx;
  const ptx::Module& mod;
  driver::LoadedModule loaded;
  uint32_t runs;

  uint32_t entry(std::string_view name) const { return static_cast<uint32_t>(mod.find_entry(name)); }
  Result<double> timed_user(std::string_view name, const ptx::ParamBuffer& p, driver::LaunchShape shape) {
    std::vector<double> t;
    if (!p.ok())
      return fail(Errc::invalid_argument, "ptx: parameters of " + std::string(name) + " do not fit its entry");
    for (uint32_t r = 0; r < runs; ++r) {
      const auto t0 = Clock::now();
      auto f = ctx.launch_module({.slot = loaded.slot, .entry = entry(name), .shape = shape, .params = p.bytes()});
      if (!f) return std::unexpected(f.error());
      if (auto w = ctx.wait(*f); !w) return std::unexpected(w.error());
      t.push_back(ms_since(t0));
    }
    return percentile(t, 0.5);
  }
  template <typename Launch>
  Result<double> timed_builtin(Launch launch) {
    std::vector<double> t;
    for (uint32_t r = 0; r < runs; ++r) {
      const auto t0 = Clock::now();
      auto f = launch();
      if (!f) return std::unexpected(f.error());
      if (auto w = ctx.wait(*f); !w) return std::unexpected(w.error());
      t.push_back(ms_since(t0));
    }
    return percentile(t, 0.5);
  }
};

template <typename F>
double timed_host(uint32_t runs, F f) {
  std::vector<double> t;
  for (uint32_t r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(ms_since(t0));
  }
  return percentile(t, 0.5);
}

Result<driver::Buffer> filled(driver::Context& ctx, uint32_t n, float value) {
  auto b = ctx.alloc(uint64_t{n} * 4);
  if (!b) return b;
  std::vector<float> v(n, value);
  if (auto r = ctx.upload(*b, std::span<const float>(v)); !r) return std::unexpected(r.error());
  return b;
}

#define TRY(var, expr) \
  auto var = (expr);   \
  if (!var) return std::unexpected(var.error())

Result<std::vector<Row>> launch_and_load_rows(driver::Device& dev, const std::string& text, const ptx::Module& mod,
                                              uint32_t runs) {
  std::vector<Row> rows;
  // Load: a text never seen (a comment makes each one new), then the same again.
  std::vector<double> first, cached;
  for (uint32_t r = 0; r < std::min(runs, 10u); ++r) {
    const std::string fresh = text + "\n// load " + std::to_string(r) + " " +
                              std::to_string(Clock::now().time_since_epoch().count()) + "\n";
    for (std::vector<double>* into : {&first, &cached}) {
      TRY(ctx, dev.create_context());
      const auto t0 = Clock::now();
      TRY(m, (*ctx)->load_module(fresh, mod.data_bytes()));
      into->push_back(ms_since(t0));
    }
  }
  rows.push_back({"load, first (parsed)", percentile(first, 0.5), 0, 0});
  rows.push_back({"load, cached", percentile(cached, 0.5), 0, 0});

  TRY(ctx, dev.create_context());
  TRY(m, (*ctx)->load_module(text, mod.data_bytes()));
  TRY(one, (*ctx)->alloc(4096));
  auto p = Params(mod, "nop");
  p.set(0, *(*ctx)->gpu_va(*one));
  if (!p.ok()) return fail(Errc::invalid_argument, "ptx: the parameter of nop does not fit its entry");
  std::vector<double> user, builtin;
  for (uint32_t r = 0; r < runs * 10; ++r) {
    auto t0 = Clock::now();
    TRY(f, (*ctx)->launch_module({.slot = m->slot,
                                  .entry = static_cast<uint32_t>(mod.find_entry("nop")),
                                  .shape = {},
                                  .params = p.bytes()}));
    if (auto w = (*ctx)->wait(*f); !w) return std::unexpected(w.error());
    user.push_back(ms_since(t0) * 1000);
    t0 = Clock::now();
    TRY(g, (*ctx)->fill({*one, 1, 1.0f}));
    if (auto w = (*ctx)->wait(*g); !w) return std::unexpected(w.error());
    builtin.push_back(ms_since(t0) * 1000);
  }
  rows.push_back({"launch to fence p50", percentile(user, 0.5), percentile(builtin, 0.5), 0, "us"});
  rows.push_back({"launch to fence p99", percentile(user, 0.99), percentile(builtin, 0.99), 0, "us"});
  return rows;
}

Result<std::vector<Row>> work_rows(driver::Device& dev, const std::string& text, const ptx::Module& mod,
                                   uint32_t runs) {
  TRY(ctx, dev.create_context());
  driver::Context& c = **ctx;
  TRY(m, c.load_module(text, mod.data_bytes()));
  Bench b{c, mod, *m, runs};
  std::vector<Row> rows;

  TRY(x, filled(c, SAXPY_N, 1.0f));
  TRY(y, filled(c, SAXPY_N, 2.0f));
  auto sp = Params(mod, "saxpy");
  sp.set(0, SAXPY_N).set(1, 0.5f).set(2, *c.gpu_va(*x)).set(3, *c.gpu_va(*y));
  TRY(su, b.timed_user("saxpy", sp, {{SAXPY_N / BLOCK, 1, 1}, {BLOCK, 1, 1}}));
  TRY(sb, b.timed_builtin([&] { return c.saxpy({*x, *y, SAXPY_N, 0.5f}); }));
  std::vector<float> hx(SAXPY_N, 1.0f), hy(SAXPY_N, 2.0f);
  const double sh = timed_host(runs, [&] {
    for (uint32_t i = 0; i < SAXPY_N; ++i) hy[i] = 0.5f * hx[i] + hy[i];
  });
  rows.push_back({"saxpy 1M", *su, *sb, sh});

  const uint32_t nn = GEMM_N * GEMM_N;
  TRY(ga, filled(c, nn, 1.0f));
  TRY(gb, filled(c, nn, 0.5f));
  TRY(gc, filled(c, nn, 0.0f));
  auto mp = Params(mod, "matmul");
  mp.set(0, GEMM_N).set(1, *c.gpu_va(*ga)).set(2, *c.gpu_va(*gb)).set(3, *c.gpu_va(*gc));
  TRY(mu, b.timed_user("matmul", mp, {{GEMM_N / 16, GEMM_N / 16, 1}, {16, 16, 1}}));
  TRY(mb, b.timed_builtin([&] { return c.sgemm({*ga, *gb, *gc, GEMM_N, GEMM_N, GEMM_N, 1.0f, 0.0f}); }));
  std::vector<float> ha(nn, 1.0f), hb(nn, 0.5f), hc(nn);
  const double mh = timed_host(runs, [&] {
    for (uint32_t i = 0; i < GEMM_N; ++i)
      for (uint32_t j = 0; j < GEMM_N; ++j) {
        float s = 0;
        for (uint32_t k = 0; k < GEMM_N; ++k) s += ha[i * GEMM_N + k] * hb[k * GEMM_N + j];
        hc[i * GEMM_N + j] = s;
      }
  });
  rows.push_back({"sgemm 256^3", *mu, *mb, mh});

  TRY(sx, filled(c, SUM_N, 1.0f));
  TRY(part, filled(c, SUM_N / BLOCK, 0.0f));
  auto rp = Params(mod, "reduce");
  rp.set(0, SUM_N).set(1, *c.gpu_va(*sx)).set(2, *c.gpu_va(*part));
  TRY(ru, b.timed_user("reduce", rp, {{SUM_N / BLOCK, 1, 1}, {BLOCK, 1, 1}}));
  std::vector<float> partial(SUM_N / BLOCK);
  if (auto r = c.download(*part, std::span<float>(partial)); !r) return std::unexpected(r.error());
  if (partial.front() != static_cast<float>(BLOCK)) return fail(Errc::device_error, "reduce: wrong block sum");
  std::vector<float> hs(SUM_N, 1.0f);
  volatile float sink = 0;
  const double rh = timed_host(runs, [&] {
    float s = 0;
    for (float v : hs) s += v;
    sink = s;
  });
  rows.push_back({"sum 1M", *ru, 0, rh});
  return rows;
}

Result<ModeResult> measure(Mode mode, const std::string& text, const ptx::Module& mod, uint32_t runs) {
  testbed::TestbedConfig tc;
  tc.mode = mode;
  tc.vram_per_vm = 256 * MiB;
  tc.device.paravirtual = mode == Mode::pv ? pvdriver::open_pv_tables : nullptr;
  TRY(tb, testbed::Testbed::create(tc));
  ModeResult out{mode, {}};
  auto st = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto a = launch_and_load_rows(vm.device, text, mod, runs);
    if (!a) return std::unexpected(a.error());
    auto b = work_rows(vm.device, text, mod, runs);
    if (!b) return std::unexpected(b.error());
    out.rows = *a;
    out.rows.insert(out.rows.end(), b->begin(), b->end());
    return {};
  });
  if (!st[0]) return std::unexpected(st[0].error());
  return out;
}

void print(const std::vector<ModeResult>& results) {
  std::printf("\n%-8s %-22s %12s %12s %12s %10s %10s\n", "mode", "row", "user", "built-in", "host loop", "user/bi",
              "user/host");
  for (const auto& m : results)
    for (const Row& r : m.rows) {
      const auto col = [&](double v) { return v > 0 ? strfmt("%9.3f %s", v, r.unit.c_str()) : std::string("-"); };
      const auto ratio = [&](double d) { return d > 0 && r.user > 0 ? strfmt("%.1fx", r.user / d) : std::string("-"); };
      std::printf("%-8s %-22s %12s %12s %12s %10s %10s\n", mode_name(m.mode), r.name.c_str(), col(r.user).c_str(),
                  col(r.builtin).c_str(), col(r.host).c_str(), ratio(r.builtin).c_str(), ratio(r.host).c_str());
    }
}

bool write_json(const std::string& path, const std::vector<ModeResult>& results, uint32_t runs) {
  nlohmann::ordered_json j = {{"suite", "ptx"}, {"runs", runs}, {"results", nlohmann::json::array()}};
  for (const auto& m : results)
    for (const Row& r : m.rows)
      j["results"].push_back({{"mode", mode_name(m.mode)},
                              {"row", r.name},
                              {"unit", r.unit},
                              {"user", r.user},
                              {"builtin", r.builtin},
                              {"host", r.host}});
  return write_json_file("ptx", path, j);
}

void usage() { std::cerr << "usage: vgpu-bench ptx [--modes LIST] [--runs N] [--json FILE]\n"; }

}  // namespace

int ptx_main(std::span<char*> args) {
  uint32_t runs = 5;
  std::vector<Mode> modes{Mode::native, Mode::fv_naive, Mode::fv_opt, Mode::pv};
  std::string json_path;
  if (Status s = parse_flags(args, {{"--modes", parsed_flag(modes, parse_modes)},
                                    {"--runs", count_flag("--runs", runs, 10'000)},
                                    {"--json", text_flag(json_path)}});
      !s) {
    std::cerr << "vgpu-bench ptx: " << s.error().message << "\n";
    usage();
    return 2;
  }
#ifndef VGPU_BENCH_PTX
  std::cerr << "vgpu-bench ptx: built without clang-14, so without its PTX kernels (apt-get install clang-14)\n";
  return 1;
#else
  const std::string text = read_file(VGPU_BENCH_PTX).value_or("");
  auto mod = ptx::parse_module(text);
  if (text.empty() || !mod) {
    std::cerr << "vgpu-bench ptx: cannot use " << VGPU_BENCH_PTX << (mod ? "" : ": " + mod.error().message) << "\n";
    return 1;
  }
  std::vector<ModeResult> results;
  for (Mode mode : modes) {
    std::fprintf(stderr, "  %-8s ...\n", mode_name(mode));
    auto r = measure(mode, text, **mod, runs);
    if (!r) {
      std::cerr << "vgpu-bench ptx: " << mode_name(mode) << ": " << r.error().what() << "\n";
      return 1;
    }
    results.push_back(*r);
  }
  print(results);
  std::printf(
      "\nmedians of %u runs (launch: %u); user: PTX on the model's interpreter; built-in: the device's own "
      "kernel; host loop: the same work in plain C++ on this CPU, one thread\n",
      runs, runs * 10);
  if (!json_path.empty() && !write_json(json_path, results, runs)) return 1;
  return 0;
#endif
}

}  // namespace vgpu::bench
