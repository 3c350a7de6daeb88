// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/device/fake_device.h"

#include <chrono>
#include <atomic>
#include <cstring>
#include <span>
#include <thread>

#include "gpu/kernels/kernels.h"

namespace vgpu::gpu {
namespace {
// Each of `height` rows of `width` bytes, at its pitch on either side.
void copy_rows(std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch, uint64_t width,
               uint64_t height) {
  for (uint64_t i = 0; i < height; ++i) std::memmove(dst + i * dst_pitch, src + i * src_pitch, width);
}
}  // namespace

FakeDevice::FakeDevice(Vram& vram) : vram_(vram), mirror_(new std::byte[vram.size()]) {
  // Garbage, not zeros: a page used before its upload must not look right.
  std::memset(mirror_.get(), 0xA5, vram.size());
}

// Raw VRAM bytes: these transfers are what the residency tracker asked
// for, so they must not go through its observer again. The tracker marks
// its downloads in the dirty log itself (as for a real device's).
void FakeDevice::upload(uint64_t addr, uint64_t len) {
  std::memcpy(mirror_.get() + addr, vram_.data() + addr, len);
  ++uploads_;
  upload_bytes_ += len;
}

void FakeDevice::download(uint64_t addr, uint64_t len) {
  std::memcpy(vram_.data() + addr, mirror_.get() + addr, len);
  ++downloads_;
  download_bytes_ += len;
}

std::byte* FakeDevice::alloc(Stream, uint64_t bytes) { return new (std::nothrow) std::byte[bytes]; }
void FakeDevice::free(Stream, std::byte* p) { delete[] p; }

void FakeDevice::copy(Stream, std::byte* dst, const std::byte* src, uint64_t bytes) {
  std::memmove(dst, src, bytes);
  ++device_copies_;
}

void FakeDevice::copy_2d(Stream, std::byte* dst, uint64_t dst_pitch, const std::byte* src, uint64_t src_pitch,
                         uint64_t width, uint64_t height) {
  if (height > 1 && (dst_pitch < width || src_pitch < width)) {
    bad_pitch_ = true;
    return;
  }
  copy_rows(dst, dst_pitch, src, src_pitch, width, height);
  ++device_copies_;
}

void FakeDevice::copy_from_host(Stream s, std::byte* dst, const std::byte* host_src, uint64_t bytes) {
  copy_2d_from_host(s, dst, bytes, host_src, bytes, bytes, 1);
}
void FakeDevice::copy_to_host(Stream s, std::byte* host_dst, const std::byte* src, uint64_t bytes) {
  copy_2d_to_host(s, host_dst, bytes, src, bytes, bytes, 1);
}

namespace {
// The host bytes a 2D copy touches: from the first row's start to the last row's end.
uint64_t extent_2d(uint64_t pitch, uint64_t width, uint64_t height) {
  return height == 0 ? 0 : (height - 1) * pitch + width;
}
}  // namespace

void FakeDevice::count_host_copy(const std::byte* host, uint64_t host_pitch, uint64_t width, uint64_t height,
                                 HostCopies& way) {
  if (!registry_.covers(host, extent_2d(host_pitch, width, height))) ++unregistered_;
  ++way.copies;
  way.bytes += width * height;
}

void FakeDevice::copy_2d_from_host(Stream, std::byte* dst, uint64_t dst_pitch, const std::byte* host_src,
                                   uint64_t src_pitch, uint64_t width, uint64_t height) {
  count_host_copy(host_src, src_pitch, width, height, h2d_);
  copy_rows(dst, dst_pitch, host_src, src_pitch, width, height);
}

void FakeDevice::copy_2d_to_host(Stream, std::byte* host_dst, uint64_t dst_pitch, const std::byte* src,
                                 uint64_t src_pitch, uint64_t width, uint64_t height) {
  count_host_copy(host_dst, dst_pitch, width, height, d2h_);
  copy_rows(host_dst, dst_pitch, src, src_pitch, width, height);
}

void FakeDevice::register_host(std::byte* base, uint64_t bytes) {
  if (registry_.add(base, bytes)) ++registrations_;
}
void FakeDevice::unregister_host(std::byte* base) { (void)registry_.remove(base); }

void FakeDevice::fill(Stream, float* dst, uint64_t n, float value) {
  kernels::fill({dst, n}, value);
  ++kernels_;
}
void FakeDevice::saxpy(Stream, float a, const float* x, float* y, uint64_t n) {
  kernels::saxpy(a, {x, n}, {y, n});
  ++kernels_;
}
void FakeDevice::madd(Stream, const float* a, const float* b, float* c, uint64_t n) {
  kernels::madd({a, n}, {b, n}, {c, n});
  ++kernels_;
}
void FakeDevice::sgemm(Stream, const cls::SgemmArgs& args, const float* a, const float* b, float* c) {
  kernels::sgemm(args, a, b, c);
  ++kernels_;
}
void FakeDevice::conv2d(Stream, const cls::Conv2dArgs& args, const float* input, const float* filter, float* output) {
  kernels::conv2d(args, input, filter, output);
  ++kernels_;
}
void FakeDevice::mriq(Stream, uint32_t num_k, uint32_t num_x, const float* kx, const float* ky, const float* kz,
                      const float* phi_mag, const float* x, const float* y, const float* z, float* qr, float* qi) {
  kernels::mriq(num_k, num_x, kx, ky, kz, phi_mag, x, y, z, qr, qi);
  ++kernels_;
}
void FakeDevice::spin(Stream, uint64_t ns) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
  ++kernels_;
}
// Work here is done when its call returns, so the stream's earlier work
// is: the word is written now, to the raw bytes as a GPU's DMA would.
bool FakeDevice::write_host_word(Stream, uint64_t phys, uint32_t value) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(vram_.data() + phys)).store(value, std::memory_order_release);
  vram_.mark_written(phys, sizeof value);
  ++host_word_writes_;
  return true;
}

Status FakeDevice::synchronize(Stream) {
  if (const uint64_t ns = sync_delay_ns_.load()) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
  ++syncs_;
  if (bad_pitch_.exchange(false))
    return fail(Errc::device_error, "fake device: a 2D copy with a pitch below its width");
  return {};
}

FakeDeviceStats FakeDevice::stats() const {
  FakeDeviceStats s;
  s.uploads = uploads_.load();
  s.upload_bytes = upload_bytes_.load();
  s.downloads = downloads_.load();
  s.download_bytes = download_bytes_.load();
  s.device_copies = device_copies_.load();
  s.kernels = kernels_.load();
  s.syncs = syncs_.load();
  s.host_word_writes = host_word_writes_.load();
  s.host_to_device = h2d_.copies.load();
  s.host_to_device_bytes = h2d_.bytes.load();
  s.device_to_host = d2h_.copies.load();
  s.device_to_host_bytes = d2h_.bytes.load();
  s.unregistered_host_copies = unregistered_.load();
  s.host_registrations = registrations_.load();
  s.registered_mappings = registry_.mappings();
  s.registered_bytes = registry_.bytes();
  return s;
}

}  // namespace vgpu::gpu
