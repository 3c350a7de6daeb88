// SPDX-License-Identifier: GPL-2.0-or-later
// vgpud-bench: what sharing the GPU through the daemon costs and how the
// scheduler divides it between separate processes (docs/benchmarks.md).
//   vgpud-bench access [--count N]        trapped read and posted write, p50/p99 ns:
//                                         through the daemon vs the embedded mediator
//   vgpud-bench launch [--count N]        launch-to-fence of a tiny kernel, and round
//                                         trips per device init and per launch
//   vgpud-bench shares [--seconds S]      real-time shares of 2 and 4 client processes
//                                         (one with 1 ms kernels, the others 10 ms),
//                                         FIFO, CREDIT and BAND; BAND weights 1:1, 1:3
//   vgpud-bench all                       the three, with the defaults
// --yield-us US starts the daemons with that BAND yield window; --only
// band-2 runs only BAND's two-VM cases.
// The daemon is the vgpud binary beside this one, started per run.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver/runtime.h"
#include "mediator/host.h"
#include "testbed/mediated_port.h"
#include "vgpu/regs.h"
#include "vgpud/client/client_port.h"
#include "vgpud/tests/daemon_process.h"

namespace vgpu::vgpud::bench {
namespace {

using Clock = std::chrono::steady_clock;
using testing::DaemonProcess;

struct Percentiles {
  double p50 = 0, p99 = 0;
};
Percentiles percentiles(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))]; };
  return {at(0.50), at(0.99)};
}

template <typename F>
std::vector<double> timed(uint32_t count, F&& f) {
  std::vector<double> ns;
  ns.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    f(i);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  return ns;
}

constexpr uint32_t PRAMIN_WORD = regs::pramin::BASE + 0x100;  // a posted write: PRAMIN, the VM's own VRAM

// The embedded comparison point: a mediator in this process with one
// 64 MiB vGPU, as QEMU's mode=fv has it; the vGPU goes with it.
struct EmbeddedVgpu {
  std::unique_ptr<mediator::Host> host;
  mediator::Vgpu* vgpu = nullptr;
  ~EmbeddedVgpu() {
    if (host && vgpu) host->destroy_vgpu(vgpu);
  }
};

std::unique_ptr<EmbeddedVgpu> embedded_vgpu() {
  mediator::HostConfig hc;
  hc.vram_bytes = 512 * MiB;
  auto host = mediator::Host::create(hc);
  if (!host) return nullptr;
  mediator::VgpuConfig vc;
  vc.vram_bytes = 64 * MiB;
  auto v = (*host)->create_vgpu(vc);
  if (!v) return nullptr;
  auto e = std::make_unique<EmbeddedVgpu>();
  e->host = std::move(*host);
  e->vgpu = *v;
  return e;
}

int access_bench(uint32_t count) {
  // Embedded: the mediator in this process, as QEMU's mode=fv has it.
  auto e = embedded_vgpu();
  if (!e) return 1;
  mediator::Vgpu* v = e->vgpu;
  uint32_t sink = 0;
  const auto emb_read = percentiles(timed(count, [&](uint32_t) { sink |= v->read32(regs::pmc::BOOT_0.offset); }));
  const auto emb_write = percentiles(timed(count, [&](uint32_t i) { v->write32(PRAMIN_WORD, i); }));
  e.reset();

  auto d = DaemonProcess::start({"--vram", "512M"});
  if (!d) return 1;
  auto c = testing::attach_or_null(d->socket(), "bench");
  if (!c) return 1;
  const auto dmn_read = percentiles(
      timed(count, [&](uint32_t) { sink |= c->read32(proto::REGION_BAR0, regs::pmc::BOOT_0.offset); }));
  const auto dmn_write = percentiles(timed(count, [&](uint32_t i) { c->write32(proto::REGION_BAR0, PRAMIN_WORD, i); }));
  (void)c->read32(proto::REGION_BAR0, regs::pmc::BOOT_0.offset);  // the posted writes are all done
  std::printf("access (%u each, ns)            p50       p99\n", count);
  std::printf("  embedded trapped read    %9.0f %9.0f\n", emb_read.p50, emb_read.p99);
  std::printf("  embedded trapped write   %9.0f %9.0f\n", emb_write.p50, emb_write.p99);
  std::printf("  daemon trapped read      %9.0f %9.0f   (a round trip)\n", dmn_read.p50, dmn_read.p99);
  std::printf("  daemon posted write      %9.0f %9.0f   (no reply)\n", dmn_write.p50, dmn_write.p99);
  std::printf("  read / posted write p50: %.1fx\n", dmn_write.p50 > 0 ? dmn_read.p50 / dmn_write.p50 : 0.0);
  return sink == 0xffffffffu;
}

// Tiny launches and their fences on one port; also counts what one
// device init and one launch cost in round trips when `client` is set.
int launch_on(driver::Port& port, const char* label, uint32_t count, Client* client) {
  const uint64_t rt0 = client ? client->round_trips() : 0, posted0 = client ? client->posted() : 0;
  auto dev = driver::Device::open(port);
  if (!dev) return std::fprintf(stderr, "%s: %s\n", label, dev.error().what().c_str()), 1;
  auto ctx = (*dev)->create_context();
  if (!ctx) return 1;
  const uint64_t rt_init = client ? client->round_trips() - rt0 : 0;
  const uint64_t posted_init = client ? client->posted() - posted0 : 0;
  auto buf = (*ctx)->alloc(4096);
  if (!buf) return 1;
  for (int i = 0; i < 20; ++i) (void)(*ctx)->wait(*(*ctx)->fill({*buf, 16, 1.f}));  // warm
  const uint64_t rt1 = client ? client->round_trips() : 0, posted1 = client ? client->posted() : 0;
  const auto lat = percentiles(timed(count, [&](uint32_t) { (void)(*ctx)->wait(*(*ctx)->fill({*buf, 16, 1.f})); }));
  std::printf("  %-9s launch-to-fence p50 %8.1f us, p99 %8.1f us", label, lat.p50 / 1e3, lat.p99 / 1e3);
  if (client)
    std::printf("; device init + context: %llu round trips, %llu posted; per launch: %.1f round trips, %.1f posted",
                static_cast<unsigned long long>(rt_init), static_cast<unsigned long long>(posted_init),
                static_cast<double>(client->round_trips() - rt1) / count,
                static_cast<double>(client->posted() - posted1) / count);
  std::printf("\n");
  return 0;
}

int launch_bench(uint32_t count) {
  std::printf("launch (a 16-element fill, %u launches)\n", count);
  auto e = embedded_vgpu();
  if (!e) return 1;
  {
    auto port = testbed::MediatedPort::create(*e->vgpu, e->host->gpu().vram());
    if (!port || launch_on(**port, "embedded", count, nullptr)) return 1;
  }
  e.reset();
  auto d = DaemonProcess::start({"--vram", "512M"});
  if (!d) return 1;
  auto c = testing::attach_or_null(d->socket(), "bench");
  if (!c) return 1;
  auto port = ClientPort::create(*c);
  if (!port) return 1;
  return launch_on(**port, "daemon", count, c.get());
}

// One client process: spin kernels of `kernel_ms` back to back (one
// outstanding, as bench sched's VMs) until `seconds` have passed.
[[noreturn]] void spinner(const std::string& socket, const std::string& name, uint32_t weight, uint32_t kernel_ms,
                          double seconds) {
  AttachOptions o = testing::test_options(name);
  o.weight = weight;
  auto c = testing::attach_or_null(socket, o);
  if (!c) _exit(2);
  auto vm = testing::open_context(*c);
  if (!vm) _exit(3);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    auto f = vm->ctx->spin({uint64_t{kernel_ms} * 1'000'000});
    if (!f || !vm->ctx->wait(*f)) _exit(5);
  }
  _exit(0);
}

std::map<std::string, uint64_t> gpu_ns(const DaemonProcess& d) {
  std::map<std::string, uint64_t> out;
  const std::string s = d.control("shares");
  size_t at = s.find('\n');
  while (at != std::string::npos && at + 1 < s.size()) {
    const size_t nl = s.find('\n', at + 1);
    const std::string line = s.substr(at + 1, nl - at - 1);
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = std::strtoull(line.c_str() + sp + 1, nullptr, 10);
    at = nl;
  }
  return out;
}

struct ShareRun {
  std::string policy;
  std::vector<uint32_t> weights, kernel_ms;
};

// Separate client processes on one daemon; shares measured after a
// warm-up, over `seconds`.
std::string g_yield_us;  // --yield-us for the daemon, when given

bool share_run(const ShareRun& r, double seconds) {
  std::vector<std::string> args = {"--vram", "2G", "--scheduler", r.policy};
  if (!g_yield_us.empty()) args.insert(args.end(), {"--yield-us", g_yield_us});
  auto d = DaemonProcess::start(args);
  if (!d) return false;
  constexpr double WARMUP_S = 2.0;
  std::vector<pid_t> kids;
  for (size_t i = 0; i < r.weights.size(); ++i) {
    const pid_t p = fork();
    if (p == 0) spinner(d->socket(), "vm" + std::to_string(i), r.weights[i], r.kernel_ms[i], WARMUP_S + seconds + 1);
    kids.push_back(p);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(WARMUP_S));
  const auto before = gpu_ns(*d);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const auto after = gpu_ns(*d);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  bool ok = true;
  for (pid_t p : kids) {
    int st = 0;
    waitpid(p, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  uint64_t all = 0;
  std::vector<uint64_t> used;
  for (size_t i = 0; i < r.weights.size(); ++i) {
    const std::string n = "vm" + std::to_string(i);
    const uint64_t u = after.count(n) && before.count(n) ? after.at(n) - before.at(n) : 0;
    used.push_back(u);
    all += u;
  }
  uint32_t wsum = 0;
  for (uint32_t w : r.weights) wsum += w;
  std::printf("  %-6s", r.policy.c_str());
  for (size_t i = 0; i < used.size(); ++i)
    std::printf("  vm%zu (%2u ms, w%u) %.3f [target %.3f]", i, r.kernel_ms[i], r.weights[i],
                all ? static_cast<double>(used[i]) / static_cast<double>(all) : 0.0,
                static_cast<double>(r.weights[i]) / wsum);
  std::printf("  util %.3f%s\n", static_cast<double>(all) / 1e9 / wall, ok ? "" : "  (a client failed)");
  return ok;
}

int shares_bench(double seconds, const std::string& only) {
  std::printf("shares over %.0f s after a 2 s warm-up (separate client processes; share = GPU time / all GPU time)\n",
              seconds);
  if (!g_yield_us.empty()) std::printf(" BAND yield window %s us\n", g_yield_us.c_str());
  bool ok = true;
  if (only == "band-2") {
    ok &= share_run({"band", {1, 1}, {1, 10}}, seconds);
    ok &= share_run({"band", {1, 3}, {1, 10}}, seconds);
    return ok ? 0 : 1;
  }
  std::printf(" 2 VMs, weights 1:1\n");
  for (const char* p : {"fifo", "credit", "band"}) ok &= share_run({p, {1, 1}, {1, 10}}, seconds);
  std::printf(" 2 VMs, weights 1:3 (the 1 ms VM has weight 1)\n");
  for (const char* p : {"fifo", "credit", "band"}) ok &= share_run({p, {1, 3}, {1, 10}}, seconds);
  std::printf(" 4 VMs, weights 1:1:1:1\n");
  for (const char* p : {"fifo", "credit", "band"}) ok &= share_run({p, {1, 1, 1, 1}, {1, 10, 10, 10}}, seconds);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace vgpu::vgpud::bench

int main(int argc, char** argv) {
  using namespace vgpu::vgpud::bench;
  CLI::App app("vgpud-bench: what sharing the GPU through the daemon costs", "vgpud-bench");
  uint32_t count = 20000;
  double seconds = 20;
  std::string only;
  app.add_option("--count", count, "accesses or launches measured (access, launch)")
      ->check(CLI::Range(1u, 10'000'000u));
  app.add_option("--seconds", seconds, "seconds of each share run (shares)")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--yield-us", g_yield_us, "the daemons' BAND yield window")->check(CLI::Range(1, 1'000'000));
  app.add_option("--only", only, "band-2: only BAND's two-VM cases")->check(CLI::IsMember({"band-2"}));
  std::string cmd;
  app.add_option("COMMAND", cmd, "access, launch, shares or all")
      ->required()
      ->check(CLI::IsMember({"access", "launch", "shares", "all"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "vgpud-bench: %s (see --help)\n", e.what());
    return 2;
  }
  if (cmd == "access") return access_bench(count);
  if (cmd == "launch") return launch_bench(std::min(count, 2000u));
  if (cmd == "shares") return shares_bench(seconds, only);
  return access_bench(count) | launch_bench(2000) | shares_bench(seconds, only);
}
