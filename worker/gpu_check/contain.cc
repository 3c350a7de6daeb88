// SPDX-License-Identifier: GPL-2.0-or-later
// Containment on the GPU (docs/cuda-worker.md): a victim VM's worker runs
// a kernel in a loop while an attacker VM's worker faults (an illegal
// address), then runs away (a spin past its deadline, killed). The victim's
// results stay byte-identical and its launch p50 comes back after the kill.
#include <atomic>
#include <mutex>
#include <thread>
#include "worker/gpu_check/check.h"
#include "worker/store_ptx.h"

namespace vgpu::worker::check {
namespace {

// out[i] = in[i] * 3 + i over n elements (entry 0); and the one-store
// kernel (entry 1), which the attacker points at a VA nobody mapped.
const std::string VICTIM_PTX = std::string(PTX_HEAD) +
                               R"(.visible .entry triple(.param .u64 in, .param .u64 out, .param .u32 n)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	.reg .pred %p;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r5, %r2, %r3, %r4;
	setp.ge.u32 %p, %r5, %r1;
	@%p bra DONE;
	mul.wide.u32 %rd3, %r5, 4;
	add.u64 %rd4, %rd1, %rd3;
	ld.global.u32 %r6, [%rd4];
	mad.lo.u32 %r7, %r6, 3, %r5;
	add.u64 %rd5, %rd2, %rd3;
	st.global.u32 [%rd5], %r7;
DONE:
	ret;
}
)" + STORE_ENTRY_PTX;

constexpr uint32_t N = 1 << 16;
constexpr uint64_t IN = APERTURE_BASE, OUT = APERTURE_BASE + 4 * N;

struct Sample {
  double t_ms, us;
};

std::vector<std::byte> params3(uint64_t a, uint64_t b, uint32_t n) {
  std::vector<std::byte> p(20);
  memcpy(p.data(), &a, 8);
  memcpy(p.data() + 8, &b, 8);
  memcpy(p.data() + 16, &n, 4);
  return p;
}

// The victim: clears out, launches, waits, and every 50th time compares
// the output with the first one.
void victim_loop(WorkerHost& v, std::atomic<bool>& stop, Clock::time_point t0, std::vector<Sample>& samples,
                 int& mismatches, std::string& error) {
  const uint32_t grid[3] = {N / 256, 1, 1}, block[3] = {256, 1, 1};
  std::vector<std::byte> first;
  for (int i = 0; !stop; i++) {
    if (auto e = run(v, make_command(Op::fill32, 2, OUT, 0, N)); !e.empty()) return void(error = e);
    auto s = Clock::now();
    auto e = run(v, launch_command(v, 2, 1, 0, grid, block, params3(IN, OUT, N)));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - s).count();
    if (!e.empty()) return void(error = e);
    samples.push_back({std::chrono::duration<double, std::milli>(s - t0).count(), us});
    if (i % 50 == 0) {
      if (auto r = run(v, make_command(Op::read, 2, OUT, 0, 4 * N)); !r.empty()) return void(error = r);
      std::vector<std::byte> got(v.bulk(), v.bulk() + 4 * N);
      if (first.empty()) first = got;
      if (got != first) mismatches++;
    }
  }
}

// p50 of the victim's launches that started in [from, to) ms.
double p50_between(const std::vector<Sample>& s, double from, double to) {
  std::vector<double> v;
  for (auto& x : s)
    if (x.t_ms >= from && x.t_ms < to) v.push_back(x.us);
  return v.empty() ? -1 : median(v);
}

}  // namespace

int contain_check(const std::string& binary, Checker& c) {
  auto victim = spawn_cuda(binary), attacker = spawn_cuda(binary);
  if (!victim || !attacker) return 1;
  for (WorkerHost* h : {victim.get(), attacker.get()}) {
    c.expect(load(*h, 1, VICTIM_PTX).empty(), "module loads in worker pid " + std::to_string(h->info().pid));
    Image img;
    for (uint32_t i = 0; i < N; i++) img.at<uint32_t>(IN)[i] = i * 2654435761u;
    c.expect(put_image(*h, img).empty(), "image written");
  }
  std::atomic<bool> stop{false};
  std::vector<Sample> samples;
  int mismatches = 0;
  std::string verror;
  auto t0 = Clock::now();
  std::thread vt(victim_loop, std::ref(*victim), std::ref(stop), t0, std::ref(samples), std::ref(mismatches),
                 std::ref(verror));
  auto ms = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); };
  std::this_thread::sleep_for(300ms);
  // The fault: a store to an address no block maps.
  double fault_at = ms();
  const uint32_t one[3] = {1, 1, 1};
  std::vector<std::byte> wild(8);
  uint64_t bad = APERTURE_BASE + (100ull << 30);
  memcpy(wild.data(), &bad, 8);
  auto t = attacker->submit(launch_command(*attacker, 3, 1, 1, one, one, wild));
  auto w = attacker->wait(*t, 10s);
  double fault_seen = ms();
  c.expect(!w && w.error().error == regs::ChannelError::mmu_fault,
           "attacker's illegal address is its channel's mmu_fault: " + (w ? std::string("none") : w.error().reason));
  std::this_thread::sleep_for(300ms);
  // The runaway: a spin of an hour, deadline 200 ms, on a worker already running.
  auto restarted = attacker->ensure_running();
  c.expect(restarted && load(*attacker, 1, VICTIM_PTX).empty() && put_image(*attacker, Image{}).empty(),
           "attacker respawned and its module loaded");
  double spin_at = ms();
  t = attacker->submit(make_command(Op::spin, 3, 3'600'000'000'000ull));
  w = attacker->wait(*t, 200ms);
  double returned_at = ms();         // after the kill, the reap and the respawn
  double killed_at = spin_at + 200;  // the deadline: SIGKILL right after it
  c.expect(!w && w.error().error == regs::ChannelError::timeout,
           "attacker's runaway ends in timeout: " + (w ? std::string("none") : w.error().reason));
  std::this_thread::sleep_for(500ms);
  stop = true;
  vt.join();
  c.expect(verror.empty(), "victim saw no error " + verror);
  c.expect(mismatches == 0, "victim's results byte-identical (" + std::to_string(samples.size()) + " launches, " +
                                std::to_string(mismatches) + " mismatches)");
  double base = p50_between(samples, 0, fault_at);
  printf(
      "victim p50 us: before %.1f, around the fault %.1f, during the runaway %.1f, 0-100 ms after the kill %.1f, "
      "100-500 ms after %.1f\n",
      base, p50_between(samples, fault_at, fault_seen + 100), p50_between(samples, spin_at, killed_at),
      p50_between(samples, killed_at, killed_at + 100), p50_between(samples, killed_at + 100, killed_at + 500));
  printf(
      "fault reported %.1f ms after its launch (the worker's exit); the runaway's wait returned %.1f ms after "
      "its launch (SIGKILL at 200 ms, then the reap); attacker restarts %u\n",
      fault_seen - fault_at, returned_at - spin_at, attacker->info().restarts);
  // Back to baseline: the first 20-launch window after the kill whose p50 is within 20% (+5 us) of before.
  double back = -1;
  for (size_t i = 0; i + 20 <= samples.size(); i++) {
    if (samples[i].t_ms < killed_at) continue;
    std::vector<double> win;
    for (size_t k = i; k < i + 20; k++) win.push_back(samples[k].us);
    if (median(win) <= base * 1.2 + 5) {
      back = samples[i + 19].t_ms - killed_at;
      break;
    }
  }
  printf("victim p50 back to baseline %.1f ms after the kill\n", back);
  c.expect(back >= 0 && back <= 100, "victim's launch p50 back within 100 ms of the kill");
  return 0;
}

}  // namespace vgpu::worker::check
