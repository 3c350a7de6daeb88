// SPDX-License-Identifier: GPL-2.0-or-later
// The cuda back end's Device: the CUDA engine (cuda_engine.cu) behind the
// Device interface. Built only where meson found CUDA (-Dcuda).
#include <string>

#include "gpu/device/backend.h"
#include "gpu/device/cuda_engine.h"
#include "gpu/device/host_registry.h"
#include "gpu/kernels/footprint.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu {
namespace {

class CudaDevice final : public Device {
 public:
  CudaDevice(std::unique_ptr<cuda::Engine> e) : e_(std::move(e)) {}
  std::string name() const override { return e_->name() + " (cuda)"; }
  std::string conv2d_library() const override { return e_->conv2d_library(); }
  void upload(uint64_t addr, uint64_t len) override { e_->upload(addr, len); }
  void download(uint64_t addr, uint64_t len) override { e_->download(addr, len); }
  void upload_on(uint32_t s, uint64_t addr, uint64_t len) override { e_->upload_on(s, addr, len); }
  void download_on(uint32_t s, uint64_t addr, uint64_t len) override { e_->download_on(s, addr, len); }
  std::byte* mirror(uint64_t phys) override { return e_->mirror(phys); }
  std::byte* alloc(Stream s, uint64_t bytes) override { return e_->alloc(s, bytes); }
  void free(Stream s, std::byte* p) override { e_->free(s, p); }
  void copy(Stream s, std::byte* dst, const std::byte* src, uint64_t bytes) override { e_->copy(s, dst, src, bytes); }
  void copy_2d(Stream s, std::byte* dst, uint64_t dp, const std::byte* src, uint64_t sp, uint64_t w,
               uint64_t h) override {
    e_->copy_2d(s, dst, dp, src, sp, w, h);
  }
  void copy_from_host(Stream s, std::byte* dst, const std::byte* src, uint64_t bytes) override {
    e_->copy_host(s, true, dst, bytes, src, bytes, bytes, 1);
  }
  void copy_to_host(Stream s, std::byte* dst, const std::byte* src, uint64_t bytes) override {
    e_->copy_host(s, false, dst, bytes, src, bytes, bytes, 1);
  }
  void copy_2d_from_host(Stream s, std::byte* dst, uint64_t dp, const std::byte* src, uint64_t sp, uint64_t w,
                         uint64_t h) override {
    e_->copy_host(s, true, dst, dp, src, sp, w, h);
  }
  void copy_2d_to_host(Stream s, std::byte* dst, uint64_t dp, const std::byte* src, uint64_t sp, uint64_t w,
                       uint64_t h) override {
    e_->copy_host(s, false, dst, dp, src, sp, w, h);
  }
  // Once per mapping (two bus windows onto one RAM register it once).
  void register_host(std::byte* base, uint64_t bytes) override {
    if (registry_.add(base, bytes)) e_->register_host(base, bytes);
  }
  void unregister_host(std::byte* base) override {
    if (registry_.remove(base)) e_->unregister_host(base);
  }
  void fill(Stream s, float* dst, uint64_t n, float v) override { e_->fill(s, dst, n, v); }
  void saxpy(Stream s, float a, const float* x, float* y, uint64_t n) override { e_->saxpy(s, a, x, y, n); }
  void madd(Stream s, const float* a, const float* b, float* c, uint64_t n) override { e_->madd(s, a, b, c, n); }
  void sgemm(Stream s, const cls::SgemmArgs& g, const float* a, const float* b, float* c) override {
    if (!kernels::sgemm_args_valid(g)) return;
    e_->sgemm(s, {g.m, g.n, g.k, g.alpha, g.beta}, a, b, c);
  }
  void conv2d(Stream s, const cls::Conv2dArgs& g, const float* in, const float* f, float* out) override {
    const uint32_t p = kernels::conv2d_out_h(g), q = kernels::conv2d_out_w(g);
    if (p == 0 || q == 0 || !kernels::conv2d_args_valid(g)) return;
    e_->conv2d(s, {g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.pad_h, g.pad_w, g.stride_h, g.stride_w, p, q}, in, f, out);
  }
  void mriq(Stream s, uint32_t nk, uint32_t nx, const float* kx, const float* ky, const float* kz, const float* phi,
            const float* x, const float* y, const float* z, float* qr, float* qi) override {
    e_->mriq(s, nk, nx, kx, ky, kz, phi, x, y, z, qr, qi);
  }
  void spin(Stream s, uint64_t ns) override { e_->spin(s, ns); }
  bool write_host_word(Stream s, uint64_t phys, uint32_t value) override { return e_->write_host_word(s, phys, value); }
  Status synchronize(Stream s) override {
    if (e_->synchronize(s)) return {};
    return fail(Errc::io_error, "cuda: " + e_->error());
  }
  void host_remapped(uint64_t addr, uint64_t len) override { e_->host_remapped(addr, len); }

 private:
  std::unique_ptr<cuda::Engine> e_;
  HostRegistry registry_;
};

}  // namespace

bool cuda_backend_built() { return true; }

Result<std::unique_ptr<Device>> make_cuda_device(Vram& vram) {
  std::string why;
  auto e = cuda::Engine::create(vram.data(), vram.size(), &why);
  if (!e) return fail(Errc::unsupported, "engine back end 'cuda': no usable GPU: " + why);
  return std::unique_ptr<Device>(new CudaDevice(std::move(e)));
}

}  // namespace vgpu::gpu
