// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu_env.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "harness.h"
#include "pv-driver/pv_page_tables.h"

namespace vgpu::guest {

using driver::Buffer;
using driver::Context;

Result<driver::Port*> gpu_port() {
  static std::unique_ptr<driver::PciPort> port;
  if (!port) {
    auto p = driver::PciPort::open();
    if (!p) return std::unexpected(p.error());
    port = std::move(*p);
  }
  return port.get();
}

bool pv_requested() {
  const char* v = std::getenv("vgpu_pv");
  return v != nullptr && std::string(v) == "1";
}

Result<Gpu> open_gpu(const driver::DeviceOptions& options) {
  auto port = gpu_port();
  if (!port) return std::unexpected(port.error());
  driver::DeviceOptions o = options;
  if (!o.paravirtual && pv_requested()) o.paravirtual = pvdriver::open_pv_tables;
  auto dev = driver::Device::open(**port, o);
  if (!dev) return std::unexpected(dev.error().context("open device"));
  // Asked for PV: prove the driver went through it (bring-up rings batches).
  if (o.paravirtual && ((*dev)->hypercall_stats() == nullptr || (*dev)->hypercall_stats()->batches == 0))
    return fail(Errc::device_error, "vgpu_pv=1 but the driver rang no PV batch");
  auto ctx = (*dev)->create_context();
  if (!ctx) return std::unexpected(ctx.error());
  return Gpu{std::move(*dev), std::move(*ctx)};
}


Result<Buffer> upload_new(Context& ctx, std::span<const float> v) {
  auto b = ctx.alloc(v.size_bytes());
  if (!b) return std::unexpected(b.error());
  if (auto ok = ctx.upload(*b, v); !ok) return std::unexpected(ok.error());
  return *b;
}

Result<std::vector<float>> download_all(Context& ctx, Buffer b, size_t n) {
  std::vector<float> v(n);
  if (auto ok = ctx.download(b, std::span<float>(v)); !ok) return std::unexpected(ok.error());
  return v;
}

Status finish(Context& ctx, const Result<driver::Fence>& f, const char* what) {
  if (!f) return std::unexpected(f.error().context(what));
  if (auto ok = ctx.wait(*f); !ok) return std::unexpected(ok.error().context(what));
  return {};
}

Status compare(std::span<const float> got, std::span<const float> want, float tol, const char* what) {
  if (got.size() != want.size())
    return check(false, std::string(what) + ": " + std::to_string(got.size()) + " values, expected " +
                            std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > tol * std::max(1.0f, std::fabs(want[i])))
      return check(false, std::string(what) + ": element " + std::to_string(i) + " is " + fixed(got[i], 6) +
                              ", reference " + fixed(want[i], 6));
  }
  return {};
}

Status download_compare(Context& ctx, Buffer b, std::span<const float> want, float tol, const char* what) {
  auto got = download_all(ctx, b, want.size());
  if (!got) return std::unexpected(got.error());
  return compare(*got, want, tol, what);
}

Status expect_error(const Error* e, Errc code, const char* what) {
  if (e == nullptr) return check(false, std::string(what) + " succeeded, expected " + errc_name(code));
  return check(e->code == code, std::string(what) + " gave " + e->what() + ", expected " + errc_name(code));
}

}  // namespace vgpu::guest
