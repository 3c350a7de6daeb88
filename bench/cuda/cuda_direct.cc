// SPDX-License-Identifier: GPL-2.0-or-later
// cuda-direct: the seed workloads straight on the GPU, no vgpu: the same
// libraries and kernels as the cuda back end (cuBLAS fp32 without TF32,
// cuDNN conv2d, the CUDA mriq and fill kernels), operands resident in
// device memory, each run timed from its launch to its stream's
// synchronize (what the workload suite times as launch to fence). The
// denominator (a) of scripts/bench-cuda. call_us is the host time of the
// launch call alone. --gap-us spins that long between runs and --evict-kb
// writes that much memory between runs: a host that did other work between
// two launches, as a virtualized launch path does (docs/benchmarks.md).
// --handover launches and synchronizes each run on a second thread that
// polls for it, as the cuda back end's engine thread does. --bw-host memfd
// puts the bandwidth rows' host buffer in a gpu::MemfdRam, the kind of memory the
// testbed's guest RAM is (default: anonymous memory).
//   cuda-direct [--runs N] [--json FILE] [--gap-us N] [--evict-kb N] [--handover]
//               [--bw-host anon|memfd]
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/device/cuda_engine.h"
#include "gpu/mem/system_memory.h"

using vgpu::gpu::cuda::ConvShape;
using vgpu::gpu::cuda::Engine;
using vgpu::gpu::cuda::SgemmShape;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Result {
  std::string name, what;
  uint32_t runs;
  double median_us;
  double call_us;  // the launch call alone
};

constexpr size_t CACHE_LINE = 64;
constexpr uint64_t BW_BYTES = uint64_t{64} << 20;  // the workload suite's bandwidth rows

// What runs between two timed runs (none by default): a spin of gap_us and
// one write to each cache line of `evict`.
struct Between {
  uint32_t gap_us = 0;
  std::vector<uint8_t> evict;
  void operator()() {
    for (size_t i = 0; i < evict.size(); i += CACHE_LINE) evict[i] = static_cast<uint8_t>(evict[i] + 1);
    if (gap_us == 0) return;
    const double until = now_s() + gap_us * 1e-6;
    while (now_s() < until) {
    }
  }
};
Between between;
bool handover = false;

// --handover: a thread that does each run it is given and polls for the
// next, as the cuda back end's engine thread does.
class Worker {
 public:
  explicit Worker(std::function<double()> job) : job_(std::move(job)), thread_([this] { loop(); }) {}
  ~Worker() {
    posted_.store(STOP, std::memory_order_release);
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  // One run of the job on the worker, waited for by polling; its result.
  double run() {
    const uint32_t n = ++count_;
    posted_.store(n, std::memory_order_release);
    while (finished_.load(std::memory_order_acquire) != n) _mm_pause();
    return result_;
  }

 private:
  static constexpr uint32_t STOP = UINT32_MAX;
  void loop() {
    for (uint32_t seen = 0;;) {
      uint32_t n;
      while ((n = posted_.load(std::memory_order_acquire)) == seen) _mm_pause();
      if (n == STOP) return;
      result_ = job_();  // read by run() after `finished_`
      seen = n;
      finished_.store(n, std::memory_order_release);
    }
  }
  std::function<double()> job_;
  std::atomic<uint32_t> posted_{0}, finished_{0};
  uint32_t count_ = 0;
  double result_ = 0;
  std::thread thread_;  // last: it starts once the members above are made
};
bool bw_memfd = false;


// Device memory: the engine's mirror of a host arena, filled with random
// floats in [-1, 1) and uploaded once.
class Arena {
 public:
  explicit Arena(uint64_t bytes) : host_(bytes) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    auto* f = reinterpret_cast<float*>(host_.data());
    for (uint64_t i = 0; i < bytes / 4; ++i) f[i] = d(rng);
    std::string err;
    engine_ = Engine::create(host_.data(), bytes, &err);
    if (!engine_) {
      std::fprintf(stderr, "cuda-direct: %s\n", err.c_str());
      std::exit(1);
    }
    engine_->upload(0, bytes);
  }
  Engine& e() { return *engine_; }
  float* take(uint64_t floats) {
    float* p = reinterpret_cast<float*>(engine_->mirror(next_));
    next_ += (floats * 4 + 255) / 256 * 256;
    if (next_ > host_.size()) {
      std::fprintf(stderr, "cuda-direct: arena too small\n");
      std::exit(1);
    }
    return p;
  }
  void reset() { next_ = 0; }

 private:
  std::vector<std::byte> host_;
  std::unique_ptr<Engine> engine_;
  uint64_t next_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// `after` runs after each timed run, outside its time (a check of its result).
Result timed(Arena& a, const std::string& name, const std::string& what, uint32_t runs,
             const std::function<void()>& launch, std::vector<uint32_t> streams,
             const std::function<void()>& after = {}) {
  auto sync = [&] {
    for (uint32_t s : streams)
      if (!a.e().synchronize(s)) {
        std::fprintf(stderr, "cuda-direct: %s: %s\n", name.c_str(), a.e().error().c_str());
        std::exit(1);
      }
  };
  // One run: launch, then synchronize; returns the launch call's seconds.
  auto one = [&] {
    const double t0 = now_s();
    launch();
    const double call_s = now_s() - t0;
    sync();
    return call_s;
  };
  one();  // warm-up: handles, cuDNN algorithm choice, first-touch
  std::optional<Worker> worker;
  if (handover) {
    worker.emplace(one);
    worker->run();  // the worker thread's own first run
  }
  std::vector<double> t, call;
  for (uint32_t i = 0; i < runs; ++i) {
    between();
    const double t0 = now_s();
    call.push_back((worker ? worker->run() : one()) * 1e6);
    t.push_back((now_s() - t0) * 1e6);
    if (after) after();
  }
  return {name, what, runs, median(t), median(call)};
}

ConvShape conv(uint32_t w, uint32_t h, uint32_t c, uint32_t n, uint32_t r, uint32_t s, uint32_t k, uint32_t ph,
               uint32_t pw, uint32_t sh, uint32_t sw) {
  const uint32_t p = (h + 2 * ph - r) / sh + 1, q = (w + 2 * pw - s) / sw + 1;
  return {n, c, h, w, k, r, s, ph, pw, sh, sw, p, q};
}

struct Flags {
  uint32_t runs = 20;
  std::string json;
};

// The flags (usage on anything else); sets the file's globals between,
// handover and bw_memfd. False on a bad command line.
bool parse_flags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      flags.runs = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--json" && i + 1 < argc)
      flags.json = argv[++i];
    else if (a == "--gap-us" && i + 1 < argc)
      between.gap_us = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--evict-kb" && i + 1 < argc)
      between.evict.assign(std::stoul(argv[++i]) * 1024, 0);
    else if (a == "--handover")
      handover = true;
    else if (a == "--bw-host" && i + 1 < argc &&
             (std::string_view(argv[i + 1]) == "anon" || std::string_view(argv[i + 1]) == "memfd"))
      bw_memfd = std::string_view(argv[++i]) == "memfd";
    else {
      std::fprintf(stderr,
                   "usage: cuda-direct [--runs N] [--json FILE] [--gap-us N] [--evict-kb N] [--handover] "
                   "[--bw-host anon|memfd]\n");
      return false;
    }
  }
  return true;
}

void run_gemms(Arena& arena, uint32_t runs, std::vector<Result>& out) {
  Engine& e = arena.e();
  struct Gemm {
    const char* name;
    uint32_t m, n, k, runs;
  };
  for (const Gemm g :
       {Gemm{"gemm1", 5124, 700, 2048, runs}, Gemm{"gemm2", 35, 700, 2048, runs}, Gemm{"gemm3", 3072, 3000, 1024, runs},
        Gemm{"gemm4", 512, 6000, 2816, runs}, Gemm{"matmul320", 320, 640, 320, 1000}}) {
    arena.reset();
    float* A = arena.take(uint64_t{g.m} * g.k);
    float* B = arena.take(uint64_t{g.k} * g.n);
    float* C = arena.take(uint64_t{g.m} * g.n);
    const SgemmShape s{g.m, g.n, g.k, 1.f, 0.f};
    out.push_back(timed(arena, g.name,
                        "sgemm " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k), g.runs,
                        [&] { e.sgemm(1, s, A, B, C); }, {1}));
  }
}

void run_convs(Arena& arena, uint32_t runs, std::vector<Result>& out) {
  Engine& e = arena.e();
  struct Conv {
    const char* name;
    ConvShape s;
  };
  for (const Conv c : {Conv{"conv1", conv(341, 79, 32, 4, 5, 10, 32, 0, 0, 2, 2)},
                       Conv{"conv2", conv(224, 224, 3, 1, 7, 7, 64, 3, 3, 2, 2)},
                       Conv{"conv3", conv(56, 56, 256, 1, 1, 1, 128, 0, 0, 2, 2)},
                       Conv{"conv4", conv(7, 7, 512, 2, 1, 1, 2048, 0, 0, 1, 1)}}) {
    arena.reset();
    const ConvShape& s = c.s;
    float* in = arena.take(uint64_t{s.n} * s.c * s.h * s.w);
    float* f = arena.take(uint64_t{s.k} * s.c * s.r * s.s);
    float* o = arena.take(uint64_t{s.n} * s.k * s.p * s.q);
    out.push_back(
        timed(arena, c.name, "conv2d (" + e.conv2d_library() + ")", runs, [&] { e.conv2d(1, s, in, f, o); }, {1}));
  }
}

void run_mixed(Arena& arena, uint32_t runs, std::vector<Result>& out) {
  Engine& e = arena.e();
  arena.reset();
  const uint32_t dim = 1024, nk = 2048, nx = 32768;
  float* A = arena.take(dim * dim);
  float* B = arena.take(dim * dim);
  float* C = arena.take(dim * dim);
  float* m[9];
  for (int i = 0; i < 4; ++i) m[i] = arena.take(nk);
  for (int i = 4; i < 9; ++i) m[i] = arena.take(nx);
  out.push_back(timed(arena, "sgemm+mriq", "sgemm 1024^3 and mriq K2048 X32768 on two streams", runs,
                      [&] {
                        e.sgemm(1, {dim, dim, dim, 1.f, 0.f}, A, B, C);
                        e.mriq(2, nk, nx, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]);
                      },
                      {1, 2}));
}

// Pinned bandwidth (bw-h2d-pinned, bw-d2h-pinned): one copy each way between
// registered host memory and device memory. False when the host memory
// cannot be made.
bool run_bandwidth(Arena& arena, uint32_t runs, std::vector<Result>& out) {
  Engine& e = arena.e();
  arena.reset();
  auto* dev = reinterpret_cast<std::byte*>(arena.take(BW_BYTES / sizeof(float)));
  // Anonymous memory, or the kind of memory the testbed's guest RAM is.
  std::vector<std::byte> anon;
  std::shared_ptr<vgpu::gpu::MemfdRam> ram;
  if (bw_memfd) {
    auto r = vgpu::gpu::MemfdRam::create(BW_BYTES, "cuda-direct-bw");
    if (!r) {
      std::fprintf(stderr, "cuda-direct: %s\n", r.error().what().c_str());
      return false;
    }
    ram = *r;
  } else {
    anon.resize(BW_BYTES);
  }
  std::byte* const host = ram ? ram->data() : anon.data();
  std::vector<std::byte> expect(BW_BYTES);
  std::mt19937 rng(2);
  for (std::byte& b : expect) b = static_cast<std::byte>(rng());
  std::memcpy(host, expect.data(), BW_BYTES);
  const bool registered = e.register_host(host, BW_BYTES);
  // As the workload does, device->host compares what arrived with what
  // the device holds after each run, outside its time.
  auto check = [&] {
    if (std::memcmp(host, expect.data(), BW_BYTES) != 0) {
      std::fprintf(stderr, "cuda-direct: bw-d2h-pinned: the bytes differ\n");
      std::exit(1);
    }
  };
  for (const bool to_device : {true, false}) {
    std::byte* dst = to_device ? dev : host;
    const std::byte* src = to_device ? host : dev;
    if (!to_device) std::memset(host, 0, BW_BYTES);
    out.push_back(timed(
        arena, to_device ? "bw-h2d-pinned" : "bw-d2h-pinned",
        std::string("64 MiB ") + (to_device ? "host->device" : "device->host, checked after each run") +
            (registered ? ", registered " : ", NOT registered ") + (bw_memfd ? "memfd" : "anonymous") + " memory",
        runs, [&] { e.copy_host(1, to_device, dst, BW_BYTES, src, BW_BYTES, BW_BYTES, 1); }, {1},
        to_device ? std::function<void()>{} : std::function<void()>{check}));
  }
  if (registered) e.unregister_host(host);
  return true;
}

void write_json(const std::string& path, Engine& e, const std::vector<Result>& out) {
  nlohmann::ordered_json j = {{"device", e.name()},
                              {"conv2d", e.conv2d_library()},
                              {"gap_us", between.gap_us},
                              {"evict_kb", between.evict.size() / 1024},
                              {"handover", handover},
                              {"bw_host", bw_memfd ? "memfd" : "anon"},
                              {"results", nlohmann::ordered_json::array()}};
  for (const Result& r : out)
    j["results"].push_back({{"name", r.name}, {"runs", r.runs}, {"median_us", r.median_us}, {"call_us", r.call_us}});
  std::ofstream(path) << j.dump() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!parse_flags(argc, argv, flags)) return 2;
  Arena arena(uint64_t{512} << 20);
  Engine& e = arena.e();
  std::vector<Result> out;
  run_gemms(arena, flags.runs, out);
  run_convs(arena, flags.runs, out);
  run_mixed(arena, flags.runs, out);
  if (!run_bandwidth(arena, flags.runs, out)) return 1;
  {
    arena.reset();
    float* x = arena.take(1);
    out.push_back(timed(arena, "launch", "fill of one element, launched and synchronized", 10000,
                        [&] { e.fill(1, x, 1, 1.f); }, {1}));
  }

  std::printf("device: %s; conv2d: %s\n", e.name().c_str(), e.conv2d_library().c_str());
  std::printf("between runs: %u us spin, %zu KiB written; launched %s\n", between.gap_us, between.evict.size() / 1024,
              handover ? "on a second thread polling for each run" : "on the timing thread");
  std::printf("%-11s %6s %12s %9s  %s\n", "workload", "runs", "median_us", "call_us", "what");
  for (const Result& r : out)
    std::printf("%-11s %6u %12.1f %9.1f  %s\n", r.name.c_str(), r.runs, r.median_us, r.call_us, r.what.c_str());
  if (!flags.json.empty()) write_json(flags.json, e, out);
  return 0;
}
