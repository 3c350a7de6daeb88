// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/gpu_check/scale.h"

#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include "worker/ctaid_rewrite.h"
#include "worker/gpu_check/check.h"
#include "worker/gpu_check/direct.h"

namespace vgpu::worker::check {
namespace {

constexpr uint32_t FMA = 2;  // BENCH_PTX's fma_loop
constexpr uint32_t ITERS = 65536, RUNS = 300, GRID = 264, BLOCK = 256;
constexpr int VMS[] = {1, 2, 4, 8};

std::vector<std::byte> fma_params() {
  std::vector<std::byte> p(12);
  uint64_t out = APERTURE_BASE;
  uint32_t iters = ITERS;
  memcpy(p.data(), &out, 8);
  memcpy(p.data() + 8, &iters, 4);
  return p;
}

// Seconds for n workers to run RUNS launches each, all at once.
double workers_s(const std::string& binary, int n) {
  std::vector<std::unique_ptr<WorkerHost>> hs;
  for (int i = 0; i < n; i++) {
    hs.push_back(spawn_cuda(binary));
    if (!hs.back() || !load(*hs.back(), 2, BENCH_PTX).empty() ||
        !run(*hs.back(), make_command(Op::map, 0, APERTURE_BASE, 0, 1)).empty())
      return -1;
  }
  const uint32_t grid[3] = {GRID, 1, 1}, block[3] = {BLOCK, 1, 1};
  std::vector<Command> cmds;
  for (auto& h : hs) cmds.push_back(launch_command(*h, 1, 2, FMA, grid, block, fma_params()));
  std::vector<std::thread> ts;
  std::atomic<int> failed{0};
  auto s = Clock::now();
  for (int i = 0; i < n; i++)
    ts.emplace_back([&, i] {
      Result<Ticket> t = fail(Errc::not_found, "");
      for (uint32_t k = 0; k < RUNS; k++) t = hs[size_t(i)]->submit(cmds[size_t(i)]);
      if (!t || !hs[size_t(i)]->wait(*t, 120s)) failed++;
    });
  for (auto& t : ts) t.join();
  double sec = std::chrono::duration<double>(Clock::now() - s).count();
  return failed ? -1 : sec;
}

// Seconds for n direct processes (this binary's direct-child) likewise:
// each makes its context, says ready, and starts when told.
double directs_s(const std::string& self, int n, bool rewritten) {
  std::vector<std::pair<pid_t, std::pair<int, int>>> kids;  // pid, (go write end, ready read end)
  for (int i = 0; i < n; i++) {
    int go[2], ready[2];
    if (pipe(go) || pipe(ready)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
      dup2(go[0], 0);
      dup2(ready[1], 1);
      execl(self.c_str(), self.c_str(), "direct-child", rewritten ? "rewritten" : "original", nullptr);
      _exit(127);
    }
    close(go[0]);
    close(ready[1]);
    kids.push_back({pid, {go[1], ready[0]}});
  }
  char b;
  for (auto& k : kids)
    if (read(k.second.second, &b, 1) != 1) return -1;
  auto s = Clock::now();
  for (auto& k : kids)
    if (write(k.second.first, "g", 1) != 1) return -1;
  bool ok = true;
  for (auto& k : kids) {
    ok = read(k.second.second, &b, 1) == 1 && ok;
    int st = 0;
    waitpid(k.first, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  double sec = std::chrono::duration<double>(Clock::now() - s).count();
  return ok ? sec : -1;
}

}  // namespace

// argv[2]: "original" (the PTX as written) or "rewritten" (as the worker
// loads it, with the six words of a whole-grid launch).
int direct_child(int argc, char** argv) {
  bool rewritten = argc > 2 && std::string(argv[2]) == "rewritten";
  Direct d;
  std::string text = rewritten ? rewrite_ctaid(BENCH_PTX).text : BENCH_PTX;
  if (auto e = d.init(text.c_str()); !e.empty()) return fprintf(stderr, "%s\n", e.c_str()), 1;
  cu::Ptr out = 0;
  if (d.api.MemAlloc(&out, GRID * BLOCK * 4) != cu::SUCCESS) return 1;
  cu::Function f = d.function("fma_loop");
  uint32_t iters = ITERS, zero = 0, grid = GRID, one = 1;
  void* params[] = {&out, &iters, &zero, &zero, &zero, &grid, &one, &one};
  if (d.launch(f, GRID, BLOCK, params) != cu::SUCCESS || d.sync() != cu::SUCCESS) return 1;  // warm
  char b;
  if (write(1, "r", 1) != 1 || read(0, &b, 1) != 1) return 1;
  for (uint32_t k = 0; k < RUNS; k++)
    if (d.launch(f, GRID, BLOCK, params) != cu::SUCCESS) return 1;
  if (d.sync() != cu::SUCCESS) return 1;
  return write(1, "d", 1) == 1 ? 0 : 1;
}

void scale(const std::string& binary, const std::string& self, FILE* json) {
  double w1 = 0, d1 = 0, r1 = 0;
  printf("\nscale: fma_loop %u x %u threads, %u iterations, %u launches per VM\n", GRID, BLOCK, ITERS, RUNS);
  printf("direct: the PTX as written; direct_rw: as the worker loads it (the %%ctaid rewrite)\n");
  printf("%-4s %9s %9s %11s %10s %10s %13s %10s\n", "vms", "worker_s", "direct_s", "direct_rw_s", "worker_agg",
         "direct_agg", "direct_rw_agg", "drw/worker");
  for (int n : VMS) {
    double w = workers_s(binary, n), d = directs_s(self, n, false), r = directs_s(self, n, true);
    if (n == 1) w1 = w, d1 = d, r1 = r;
    // Aggregate throughput over one: (n * RUNS / time) / (RUNS / time of one).
    double wa = n * w1 / w, da = n * d1 / d, ra = n * r1 / r;
    printf("%-4d %9.4f %9.4f %11.4f %10.3f %10.3f %13.3f %10.3f\n", n, w, d, r, wa, da, ra, r / w);
    fprintf(json,
            "  {\"vms\": %d, \"worker_s\": %.5f, \"direct_s\": %.5f, \"direct_rewritten_s\": %.5f, "
            "\"worker_agg\": %.4f, \"direct_agg\": %.4f, \"direct_rewritten_agg\": %.4f}%s\n",
            n, w, d, r, wa, da, ra, n == 8 ? "" : ",");
  }
  printf("one launch: worker %.1f us, direct %.1f us, direct rewritten %.1f us\n", w1 / RUNS * 1e6, d1 / RUNS * 1e6,
         r1 / RUNS * 1e6);
}

}  // namespace vgpu::worker::check
