// SPDX-License-Identifier: GPL-2.0-or-later
// A Device whose "device memory" is a second host buffer and whose kernels
// are the model's (gpu/kernels): the whole device path, residency
// included, runs in CI without a GPU. Every transfer is counted; the mirror
// is separate from VRAM, so a missing upload or download shows as wrong
// bytes.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "gpu/device/device.h"
#include "gpu/device/host_registry.h"
#include "gpu/mem/vram.h"

namespace vgpu::gpu {

struct FakeDeviceStats {
  uint64_t uploads = 0, upload_bytes = 0;
  uint64_t downloads = 0, download_bytes = 0;
  uint64_t device_copies = 0, kernels = 0, syncs = 0;
  uint64_t host_word_writes = 0;  // write_host_word: fences the device wrote
  // System memory DMA: host->device and device->host copies (a 2D copy
  // counts once), those whose host side was not registered memory, and
  // register_host calls that registered a new mapping / what is now.
  uint64_t host_to_device = 0, host_to_device_bytes = 0;
  uint64_t device_to_host = 0, device_to_host_bytes = 0;
  uint64_t unregistered_host_copies = 0;
  uint64_t host_registrations = 0, registered_mappings = 0, registered_bytes = 0;
};

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(Vram& vram);

  std::string name() const override { return "fake device (host memory)"; }
  std::string conv2d_library() const override { return "model conv2d (host)"; }
  void upload(uint64_t addr, uint64_t len) override;
  void download(uint64_t addr, uint64_t len) override;
  std::byte* mirror(uint64_t phys) override { return mirror_.get() + phys; }
  std::byte* alloc(Stream, uint64_t bytes) override;
  void free(Stream, std::byte* p) override;
  void copy(Stream, std::byte* dst, const std::byte* src, uint64_t bytes) override;
  void copy_2d(Stream, std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch, uint64_t width,
               uint64_t height) override;
  void copy_from_host(Stream, std::byte* dst, const std::byte* host_src, uint64_t bytes) override;
  void copy_to_host(Stream, std::byte* host_dst, const std::byte* src, uint64_t bytes) override;
  void copy_2d_from_host(Stream, std::byte* dst, uint64_t dst_pitch, const std::byte* host_src, uint64_t src_pitch,
                         uint64_t width, uint64_t height) override;
  void copy_2d_to_host(Stream, std::byte* host_dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                       uint64_t width, uint64_t height) override;
  void register_host(std::byte* base, uint64_t bytes) override;
  void unregister_host(std::byte* base) override;
  void fill(Stream, float* dst, uint64_t n, float value) override;
  void saxpy(Stream, float a, const float* x, float* y, uint64_t n) override;
  void madd(Stream, const float* a, const float* b, float* c, uint64_t n) override;
  void sgemm(Stream, const cls::SgemmArgs& args, const float* a, const float* b, float* c) override;
  void conv2d(Stream, const cls::Conv2dArgs& args, const float* input, const float* filter, float* output) override;
  void mriq(Stream, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
            const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) override;
  void spin(Stream, uint64_t ns) override;
  bool write_host_word(Stream, uint64_t phys, uint32_t value) override;
  Status synchronize(Stream) override;

  FakeDeviceStats stats() const;
  // Tests: every synchronize waits this long first, as a host thread that
  // notices a GPU's completion late would (what the device writes comes
  // before it, in stream order).
  void set_sync_delay(uint64_t ns) { sync_delay_ns_ = ns; }
  // The mirror's bytes, for tests.
  const std::byte* mirror_bytes() const { return mirror_.get(); }

 private:
  Vram& vram_;
  std::unique_ptr<std::byte[]> mirror_;
  std::atomic<uint64_t> uploads_{0}, upload_bytes_{0}, downloads_{0}, download_bytes_{0};
  std::atomic<uint64_t> device_copies_{0}, kernels_{0}, syncs_{0}, host_word_writes_{0};
  // A 2D copy with a pitch below its width, which CUDA refuses
  // (cudaErrorInvalidPitchValue): the next synchronize fails, as there.
  std::atomic<bool> bad_pitch_{false};
  std::atomic<uint64_t> sync_delay_ns_{0};
  // Host<->device copies, each way: how many (a 2D copy counts once) and their bytes.
  struct HostCopies {
    std::atomic<uint64_t> copies{0}, bytes{0};
  };
  HostCopies h2d_, d2h_;
  std::atomic<uint64_t> unregistered_{0}, registrations_{0};
  HostRegistry registry_;

  // Counts a 2D copy whose host side starts at `host` with `host_pitch`
  // into `way`, and as unregistered where the registry does not cover it.
  void count_host_copy(const std::byte* host, uint64_t host_pitch, uint64_t width, uint64_t height, HostCopies& way);
};

}  // namespace vgpu::gpu
