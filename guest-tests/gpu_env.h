// SPDX-License-Identifier: GPL-2.0-or-later
// What every guest test stands on: the vgpu PCI device opened once through
// driver::PciPort (libpciaccess), and a fresh Device + Context per test so
// a test's options or channel error never leak into the next one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/random.h"
#include "driver/pci_port.h"
#include "driver/runtime.h"

namespace vgpu::guest {

// Opens the PCI port; later calls return the same port.
[[nodiscard]] Result<driver::Port*> gpu_port();

struct Gpu {
  std::unique_ptr<driver::Device> dev;
  std::unique_ptr<driver::Context> ctx;
};

// vgpu_pv=1 in the environment (a kernel parameter: scripts/run-guest
// --pv on): open_gpu opens the driver with DeviceOptions::paravirtual.
bool pv_requested();
[[nodiscard]] Result<Gpu> open_gpu(const driver::DeviceOptions& options = {});

// Deterministic floats in [-1, 1).
using vgpu::random_floats;  // common/random.h

// Allocates a buffer and uploads v into it.
[[nodiscard]] Result<driver::Buffer> upload_new(driver::Context& ctx, std::span<const float> v);
[[nodiscard]] Result<std::vector<float>> download_all(driver::Context& ctx, driver::Buffer b, size_t n);
// Waits for a launched fence.
[[nodiscard]] Status finish(driver::Context& ctx, const Result<driver::Fence>& f, const char* what);

// Element-wise |got - want| <= tol * max(1, |want|); names the first miss.
[[nodiscard]] Status compare(std::span<const float> got, std::span<const float> want, float tol, const char* what);
// The first want.size() floats of `b`, downloaded and compared with `want`.
[[nodiscard]] Status download_compare(driver::Context& ctx, driver::Buffer b, std::span<const float> want, float tol,
                                      const char* what);
// The error code a failed call must have.
[[nodiscard]] Status expect_error(const Error* e, Errc code, const char* what);

}  // namespace vgpu::guest
