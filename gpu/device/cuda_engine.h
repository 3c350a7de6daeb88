// SPDX-License-Identifier: GPL-2.0-or-later
// The CUDA side of the cuda back end, compiled by nvcc (C++20, no project
// headers): a VRAM mirror in device memory, streams per channel, cuBLAS,
// cuDNN (if built with it) and the CUDA kernels of cuda_kernels.cu.
// gpu/device/cuda_device.cc adapts it to the Device interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace vgpu::gpu::cuda {

struct SgemmShape {
  uint32_t m, n, k;
  float alpha, beta;
};
struct ConvShape {
  uint32_t n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, p, q;
};

class Engine {
 public:
  // host_vram: the VRAM mapping (registered with cudaHostRegister). On
  // failure: nullptr and *error says why (no driver, no device, ...).
  static std::unique_ptr<Engine> create(std::byte* host_vram, uint64_t bytes, std::string* error);
  virtual ~Engine() = default;

  virtual std::string name() const = 0;
  virtual std::string conv2d_library() const = 0;
  // Last CUDA error (sticky), empty if none.
  virtual std::string error() const = 0;

  // Synchronous host<->mirror transfers (same offset on both sides).
  virtual void upload(uint64_t addr, uint64_t len) = 0;
  virtual void download(uint64_t addr, uint64_t len) = 0;
  // The same, ordered on a stream (done when it is synchronized).
  virtual void upload_on(uint32_t stream, uint64_t addr, uint64_t len) = 0;
  virtual void download_on(uint32_t stream, uint64_t addr, uint64_t len) = 0;
  // The host VRAM mapping was replaced under [addr, addr+len).
  virtual void host_remapped(uint64_t addr, uint64_t len) = 0;
  // Other host memory the device DMAs (guest RAM): cudaHostRegister /
  // cudaHostUnregister. false: not registered (copies still work, slower).
  virtual bool register_host(std::byte* base, uint64_t bytes) = 0;
  virtual void unregister_host(std::byte* base) = 0;
  // A 2D copy (`height` rows of `width` bytes) between host memory and
  // device memory, on a stream: to the device when `to_device`.
  virtual void copy_host(uint32_t stream, bool to_device, std::byte* dst, uint64_t dst_pitch, const std::byte* src,
                         uint64_t src_pitch, uint64_t width, uint64_t height) = 0;

  virtual std::byte* mirror(uint64_t phys) = 0;
  virtual std::byte* alloc(uint32_t stream, uint64_t bytes) = 0;
  virtual void free(uint32_t stream, std::byte* p) = 0;
  virtual void copy(uint32_t stream, std::byte* dst, const std::byte* src, uint64_t bytes) = 0;
  virtual void copy_2d(uint32_t stream, std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                       uint64_t width, uint64_t height) = 0;
  virtual void fill(uint32_t stream, float* dst, uint64_t n, float value) = 0;
  virtual void saxpy(uint32_t stream, float a, const float* x, float* y, uint64_t n) = 0;
  virtual void madd(uint32_t stream, const float* a, const float* b, float* c, uint64_t n) = 0;
  virtual void sgemm(uint32_t stream, const SgemmShape& g, const float* a, const float* b, float* c) = 0;
  virtual void conv2d(uint32_t stream, const ConvShape& g, const float* in, const float* filter, float* out) = 0;
  virtual void mriq(uint32_t stream, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
                    const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) = 0;
  virtual void spin(uint32_t stream, uint64_t ns) = 0;
  // A 4-byte store into the registered host VRAM at `phys`, after the
  // stream's earlier work. false: VRAM is not registered (nothing queued).
  virtual bool write_host_word(uint32_t stream, uint64_t phys, uint32_t value) = 0;
  // false: the stream's work failed (error() says how).
  virtual bool synchronize(uint32_t stream) = 0;
};

}  // namespace vgpu::gpu::cuda
