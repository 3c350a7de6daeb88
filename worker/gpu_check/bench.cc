// SPDX-License-Identifier: GPL-2.0-or-later
// Figures of the worker beside direct CUDA on the same PTX, same GPU, same
// run: launch to fence, 10,000 back-to-back ~10 us kernels, pinned copies
// (JSON plus a table). Scale: scale.cc.
#include <sys/mman.h>
#include <unistd.h>

#include <thread>
#include "worker/gpu_check/check.h"
#include "worker/gpu_check/direct.h"
#include "worker/gpu_check/scale.h"
#include "worker/spin_ptx.h"

namespace vgpu::worker::check {
namespace {

constexpr uint32_t EMPTY = 0, SPIN = 1;  // BENCH_PTX's entries in text order
constexpr uint32_t LAUNCHES = 3000, ROUNDS = 3, B2B = 10'000;
constexpr uint64_t SPIN_NS = 10'000;
constexpr uint32_t COPIES = 40;
const uint32_t ONE[3] = {1, 1, 1};

double us_since(Clock::time_point s) { return std::chrono::duration<double, std::micro>(Clock::now() - s).count(); }

double worker_launch_p50(WorkerHost& h, std::vector<double>& all) {
  std::vector<double> v;
  Command c = launch_command(h, 1, 2, EMPTY, ONE, ONE, {});
  for (uint32_t i = 0; i < LAUNCHES; i++) {
    auto s = Clock::now();
    auto t = h.submit(c);
    if (!t || !h.wait(*t, 10s)) return -1;
    v.push_back(us_since(s));
  }
  all.insert(all.end(), v.begin(), v.end());
  return median(v);
}

double direct_launch_p50(Direct& d, std::vector<double>& all) {
  std::vector<double> v;
  cu::Function f = d.function("empty");
  for (uint32_t i = 0; i < LAUNCHES; i++) {
    auto s = Clock::now();
    if (d.launch(f, 1, 1, nullptr) != cu::SUCCESS || d.sync() != cu::SUCCESS) return -1;
    v.push_back(us_since(s));
  }
  all.insert(all.end(), v.begin(), v.end());
  return median(v);
}

double worker_b2b_s(WorkerHost& h) {
  std::vector<std::byte> p(8);
  memcpy(p.data(), &SPIN_NS, 8);
  Command c = launch_command(h, 1, 2, SPIN, ONE, ONE, p);
  auto s = Clock::now();
  Result<Ticket> t = fail(Errc::not_found, "");
  for (uint32_t i = 0; i < B2B; i++) t = h.submit(c, i + 1 == B2B);
  if (!t || !h.wait(*t, 60s)) return -1;
  return us_since(s) / 1e6;
}

double direct_b2b_s(Direct& d) {
  cu::Function f = d.function(SPIN_ENTRY);
  uint64_t ns = SPIN_NS;
  void* params[] = {&ns};
  auto s = Clock::now();
  for (uint32_t i = 0; i < B2B; i++)
    if (d.launch(f, 1, 1, params) != cu::SUCCESS) return -1;
  if (d.sync() != cu::SUCCESS) return -1;
  return us_since(s) / 1e6;
}

// Median GB/s of COPIES pinned copies of the bulk window's size.
double worker_copy_gbs(WorkerHost& h, Op op) {
  std::vector<double> v;
  for (uint32_t i = 0; i < COPIES; i++) {
    auto s = Clock::now();
    if (!run(h, make_command(op, 1, APERTURE_BASE, 0, IMAGE_BYTES)).empty()) return -1;
    v.push_back(double(IMAGE_BYTES) / (us_since(s) * 1e3));
  }
  return median(v);
}

// Direct copies from cuMemHostAlloc memory, or (memfd) from a shared memfd
// mapping registered with cuMemHostRegister, as the worker's bulk window is.
double direct_copy_gbs(Direct& d, bool to_device, bool memfd) {
  void* host = nullptr;
  cu::Ptr dev = 0;
  if (memfd) {
    int fd = memfd_create("bench", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, IMAGE_BYTES) != 0) return -1;
    host = mmap(nullptr, IMAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (host == MAP_FAILED || d.api.MemHostRegister(host, IMAGE_BYTES, 0) != cu::SUCCESS) return -1;
  } else if (d.api.MemHostAlloc(&host, IMAGE_BYTES, 0) != cu::SUCCESS) {
    return -1;
  }
  if (d.api.MemAlloc(&dev, IMAGE_BYTES) != cu::SUCCESS) return -1;
  std::vector<double> v;
  for (uint32_t i = 0; i < COPIES; i++) {
    auto s = Clock::now();
    cu::Result r = to_device ? d.api.MemcpyHtoDAsync(dev, host, IMAGE_BYTES, d.stream)
                             : d.api.MemcpyDtoHAsync(host, dev, IMAGE_BYTES, d.stream);
    if (r != cu::SUCCESS || d.sync() != cu::SUCCESS) return -1;
    v.push_back(double(IMAGE_BYTES) / (us_since(s) * 1e3));
  }
  return median(v);
}

}  // namespace

int bench(const std::string& binary, const std::string& self, const std::string& json, Checker& c) {
  auto h = spawn_cuda(binary);
  if (!h) return 1;
  Direct d;
  if (auto e = d.init(BENCH_PTX.c_str()); !e.empty()) return fprintf(stderr, "%s\n", e.c_str()), 1;
  c.expect(load(*h, 2, BENCH_PTX).empty() && put_image(*h, Image{}).empty(), "bench module and image on the worker");
  FILE* out = fopen(json.c_str(), "w");
  fprintf(out, "{\"device\": \"%s\",\n \"rounds\": [\n", h->info().device.c_str());
  std::vector<double> wl, dl;
  printf("%-6s %12s %12s %9s %10s %10s %7s %9s %9s %9s %9s\n", "round", "worker_us", "direct_us", "added_us", "w_b2b_s",
         "d_b2b_s", "b2b", "w_h2d", "d_h2d", "w_d2h", "d_d2h");
  for (uint32_t r = 0; r < ROUNDS; r++) {
    double w = worker_launch_p50(*h, wl), dd = direct_launch_p50(d, dl);
    double wb = worker_b2b_s(*h), db = direct_b2b_s(d);
    double wh = worker_copy_gbs(*h, Op::write), dh = direct_copy_gbs(d, true, false);
    double wd = worker_copy_gbs(*h, Op::read), ddh = direct_copy_gbs(d, false, false);
    double mh = direct_copy_gbs(d, true, true), md = direct_copy_gbs(d, false, true);
    printf("round %u: direct from a registered memfd (the worker's kind of memory): h2d %.2f, d2h %.2f GB/s\n", r + 1,
           mh, md);
    printf("%-6u %12.2f %12.2f %9.2f %10.4f %10.4f %7.3f %9.2f %9.2f %9.2f %9.2f\n", r + 1, w, dd, w - dd, wb, db,
           db / wb, wh, dh, wd, ddh);
    fprintf(out,
            "  {\"worker_launch_p50_us\": %.3f, \"direct_launch_p50_us\": %.3f, \"worker_b2b_s\": %.5f, "
            "\"direct_b2b_s\": %.5f, \"worker_h2d_gbs\": %.3f, \"direct_h2d_gbs\": %.3f, \"worker_d2h_gbs\": %.3f, "
            "\"direct_d2h_gbs\": %.3f, \"direct_memfd_h2d_gbs\": %.3f, \"direct_memfd_d2h_gbs\": %.3f}%s\n",
            w, dd, wb, db, wh, dh, wd, ddh, mh, md, r + 1 < ROUNDS ? "," : "");
  }
  printf("all rounds: worker launch-to-fence p50 %.2f us p99 %.2f; direct launch+sync p50 %.2f us p99 %.2f\n",
         median(wl), percentile(wl, 0.99), median(dl), percentile(dl, 0.99));
  fprintf(out, " ],\n \"scale\": [\n");
  h.reset();
  scale(binary, self, out);
  fprintf(out, " ]}\n");
  fclose(out);
  return 0;
}

}  // namespace vgpu::worker::check
