// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/device_port.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/launch_trace.h"
#include "pv-driver/pv_page_tables.h"
#include "vgpu/regs.h"
#ifdef VGPU_CUDA_HAVE_TESTBED
#include "testbed/testbed.h"
#include "worker/worker_host.h"
#endif
#ifdef VGPU_CUDA_HAVE_PCI
#include "driver/pci_port.h"
#endif

namespace vgpu::cuda {
namespace {

#ifdef VGPU_CUDA_HAVE_TESTBED
// VGPU_LAUNCH_TRACE=1: the launch phases (common/launch_trace.h) of every
// waited launch of this process, their p50 offsets from the doorbell
// printed to stderr at exit (docs/cuda-worker.md, "Launch-to-fence").
// The workers' ring traffic per kept launch (setup's commands included):
// the hand-overs to a worker and the fence round trips back.
void print_worker_traffic() {
  const worker::WorkerTraffic t = worker::worker_traffic();
  const double n = static_cast<double>(std::max<uint64_t>(LaunchTrace::launches(), 1));
  if (t.commands == 0) return;  // no worker: the model's engines
  auto per = [n](uint64_t v) { return static_cast<double>(v) / n; };
  std::fprintf(stderr,
               "worker traffic per launch: commands %.3f, fenced %.3f, bells (worker woken) %.3f, waits %.3f, "
               "waits that yielded %.3f, waits that slept %.3f\n",
               per(t.commands), per(t.fenced), per(t.bells), per(t.waits), per(t.waits_yielded), per(t.waits_slept));
  std::fprintf(stderr,
               "{\"bench\": \"worker_traffic\", \"launches\": %lu, \"commands\": %lu, \"fenced\": %lu, "
               "\"bells\": %lu, \"waits\": %lu, \"waits_yielded\": %lu, \"waits_slept\": %lu}\n",
               static_cast<unsigned long>(LaunchTrace::launches()), static_cast<unsigned long>(t.commands),
               static_cast<unsigned long>(t.fenced), static_cast<unsigned long>(t.bells),
               static_cast<unsigned long>(t.waits), static_cast<unsigned long>(t.waits_yielded),
               static_cast<unsigned long>(t.waits_slept));
}

void print_launch_phases() {
  const auto figures = LaunchTrace::figures();
  // Samples: launches that kept the phase (fewer for a phase marked only
  // sometimes, e.g. pfifo_busy: rings that found PFIFO at work).
  std::fprintf(stderr, "launch phases (%lu launches): p10/p50/p90 us from the doorbell, samples\n",
               static_cast<unsigned long>(LaunchTrace::launches()));
  for (const LaunchPhaseFigures& f : figures)
    if (f.samples != 0)
      std::fprintf(stderr, "  %-16s %8.2f %8.2f %8.2f %8lu\n", std::string(f.name).c_str(), f.p10_us, f.p50_us,
                   f.p90_us, static_cast<unsigned long>(f.samples));
  // The same as one JSON line, for a script comparing runs.
  struct Column {
    const char* key;
    double LaunchPhaseFigures::*us;
  };
  static constexpr Column COLUMNS[] = {{"p10_us", &LaunchPhaseFigures::p10_us},
                                       {"p50_us", &LaunchPhaseFigures::p50_us},
                                       {"p90_us", &LaunchPhaseFigures::p90_us}};
  std::string json = "{\"bench\": \"launch_phases\", \"launches\": ";
  json.append(std::to_string(LaunchTrace::launches()));
  for (const Column& c : COLUMNS) {
    json.append(", \"").append(c.key).append("\": {");
    const char* sep = "";
    for (const LaunchPhaseFigures& f : figures) {
      if (f.samples == 0) continue;
      char value[32];
      std::snprintf(value, sizeof value, "%.3f", f.*c.us);
      json.append(sep).append("\"").append(f.name).append("\": ").append(value);
      sep = ", ";
    }
    json += "}";
  }
  json.append(", \"samples\": {");
  const char* sep = "";
  for (const LaunchPhaseFigures& f : figures) {
    if (f.samples == 0) continue;
    json.append(sep).append("\"").append(f.name).append("\": ").append(std::to_string(f.samples));
    sep = ", ";
  }
  std::fprintf(stderr, "%s}}\n", json.c_str());
  print_worker_traffic();
}

void trace_launches_if_asked() {
  const char* v = std::getenv("VGPU_LAUNCH_TRACE");
  if (v == nullptr || std::string(v) != "1" || LaunchTrace::enabled()) return;
  LaunchTrace::reset();
  LaunchTrace::enable(true);
  std::atexit(print_launch_phases);
}

// The testbed's VM 0: one VM, the driver opened on its port with the
// testbed's device options (pv: the paravirtual interface).
class TestbedDevice final : public OpenedDevice {
 public:
  static Result<std::unique_ptr<OpenedDevice>> open(testbed::Mode mode) {
    testbed::TestbedConfig config;
    config.mode = mode;
    trace_launches_if_asked();
    auto tb = testbed::Testbed::create(config);
    if (!tb) return std::unexpected(tb.error().context("testbed"));
    auto dev = driver::Device::open((*tb)->port(0), (*tb)->config().device);
    if (!dev) return std::unexpected(dev.error().context("open device"));
    return std::unique_ptr<OpenedDevice>(new TestbedDevice(std::move(*tb), std::move(*dev), mode));
  }
  ~TestbedDevice() override { dev_.reset(); }
  driver::Device& device() override { return *dev_; }
  std::string description() const override { return testbed::mode_name(mode_); }

 private:
  TestbedDevice(std::unique_ptr<testbed::Testbed> tb, std::unique_ptr<driver::Device> dev, testbed::Mode mode)
      : tb_(std::move(tb)), dev_(std::move(dev)), mode_(mode) {}
  std::unique_ptr<testbed::Testbed> tb_;
  std::unique_ptr<driver::Device> dev_;
  testbed::Mode mode_;
};
#endif

#ifdef VGPU_CUDA_HAVE_PCI
// The vgpu PCI device of a Linux guest, as guest-tests/gpu_env.cc opens it.
class PciDevice final : public OpenedDevice {
 public:
  static Result<std::unique_ptr<OpenedDevice>> open() {
    auto port = driver::PciPort::open();
    if (!port) return std::unexpected(port.error());
    driver::DeviceOptions options;
    const char* pv = std::getenv("vgpu_pv");
    options.paravirtual = pv != nullptr && std::string(pv) == "1" ? pvdriver::open_pv_tables : nullptr;
    auto dev = driver::Device::open(**port, options);
    if (!dev) return std::unexpected(dev.error().context("open device"));
    return std::unique_ptr<OpenedDevice>(new PciDevice(std::move(*port), std::move(*dev)));
  }
  ~PciDevice() override { dev_.reset(); }
  driver::Device& device() override { return *dev_; }
  std::string description() const override { return port_->name(); }  // "pci 0000:00:01.0 (vfio, ...)"
  std::string pci_slot() const override { return port_->name(); }

 private:
  PciDevice(std::unique_ptr<driver::PciPort> port, std::unique_ptr<driver::Device> dev)
      : port_(std::move(port)), dev_(std::move(dev)) {}
  std::unique_ptr<driver::PciPort> port_;
  std::unique_ptr<driver::Device> dev_;
};
#endif

#ifdef VGPU_CUDA_HAVE_TESTBED
// A vgpu PCI function in sysfs (vendor:device as include/vgpu/regs.h): the
// default port when the build has others to choose from.
bool pci_device_present() {
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    unsigned vendor = 0, device = 0;
    std::ifstream v(d.path() / "vendor"), dv(d.path() / "device");
    if (v >> std::hex >> vendor && dv >> std::hex >> device && vendor == regs::pci::VENDOR_ID &&
        device == regs::pci::DEVICE_ID)
      return true;
  }
  return false;
}
#endif

}  // namespace

std::string port_choice() {
  const char* v = std::getenv("VGPU_CUDA_PORT");
  if (v != nullptr && *v != '\0') return v;
#ifdef VGPU_CUDA_HAVE_TESTBED
  return pci_device_present() ? "pci" : "native";
#else
  return "pci";  // the guest's build has no other port
#endif
}

Result<std::unique_ptr<OpenedDevice>> open_device() {
  std::string choice = port_choice();
  if (choice == "pci") {
#ifdef VGPU_CUDA_HAVE_PCI
    return PciDevice::open();
#else
    return fail(Errc::unsupported, "VGPU_CUDA_PORT=pci: this libcuda was built without the PCI port (libpciaccess)");
#endif
  }
#ifdef VGPU_CUDA_HAVE_TESTBED
  auto mode = testbed::parse_mode(choice);
  if (!mode)
    return fail(Errc::invalid_argument, "VGPU_CUDA_PORT=" + choice + ": expected native, fv-naive, fv-opt, pv or pci");
  return TestbedDevice::open(*mode);
#else
  return fail(Errc::invalid_argument,
              "VGPU_CUDA_PORT=" + choice + ": this libcuda is the guest's, its only port is pci");
#endif
}

}  // namespace vgpu::cuda
