// SPDX-License-Identifier: GPL-2.0-or-later
// Memory (docs/cuda-programs.md, "Memory"): a CUdeviceptr is a GPU VA of
// the current context's address space, inside one driver::Buffer. Copies
// with the host complete before they return (their Async forms too: the
// driver's transfers wait); device-to-device copies and memsets run on the
// context's channel after the work before them.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/libcuda/state.h"

using vgpu::cuda::api_lock;
using vgpu::cuda::CuResult;
using vgpu::cuda::State;
namespace driver = vgpu::driver;

namespace {

struct Place {
  driver::Buffer buffer;
  uint64_t offset;
  uint64_t va;
};

// The allocation holding [dptr, dptr + bytes) in ctx.
CuResult<Place> resolve(CUctx_st* ctx, CUdeviceptr dptr, uint64_t bytes) {
  auto it = ctx->allocs.upper_bound(dptr);
  if (it == ctx->allocs.begin()) return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  --it;
  uint64_t off = dptr - it->first;
  if (off >= it->second.bytes || bytes > it->second.bytes - off) return std::unexpected(CUDA_ERROR_INVALID_VALUE);
  return Place{it->second.buffer, off, dptr};
}

// The context of stream s (null: the current one), for an Async form.
CuResult<CUctx_st*> context_of(CUstream s) { return vgpu::cuda::stream_context(s); }

CUresult upload(CUctx_st* ctx, CUdeviceptr dst, const void* src, size_t n) {
  if (src == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  auto p = resolve(ctx, dst, n);
  if (!p) return p.error();
  auto s = ctx->drv->upload(p->buffer, p->offset, std::span(static_cast<const std::byte*>(src), n));
  return s ? CUDA_SUCCESS : vgpu::cuda::work_error(ctx, s.error());
}

CUresult download(CUctx_st* ctx, void* dst, CUdeviceptr src, size_t n) {
  if (dst == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  auto p = resolve(ctx, src, n);
  if (!p) return p.error();
  auto s = ctx->drv->download(p->buffer, p->offset, std::span(static_cast<std::byte*>(dst), n));
  return s ? CUDA_SUCCESS : vgpu::cuda::work_error(ctx, s.error());
}

CUresult copy(CUctx_st* ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, bool wait) {
  auto d = resolve(ctx, dst, n);
  auto s = resolve(ctx, src, n);
  if (!d || !s) return CUDA_ERROR_INVALID_VALUE;
  if (n == 0) return CUDA_SUCCESS;
  auto f = ctx->drv->copy(d->buffer, d->offset, s->buffer, s->offset, n);
  if (!f) return vgpu::cuda::work_error(ctx, f.error());
  ctx->last = *f;
  return wait ? vgpu::cuda::wait(ctx, *f) : CUDA_SUCCESS;
}

// Memsets of more than this many bytes fill their aligned words on the
// GPU (the built-in fill kernel); smaller ones, and the unaligned edges,
// are uploads of the pattern.
constexpr uint64_t FILL_MIN_BYTES = 64 * 1024;

CUresult upload_pattern(CUctx_st* ctx, CUdeviceptr dst, uint32_t word, uint64_t bytes) {
  constexpr uint64_t CHUNK = 1 << 20;
  std::vector<std::byte> buf(std::min(bytes, CHUNK));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::byte>(word >> (8 * ((dst + i) % 4)));
  for (uint64_t done = 0; done < bytes; done += buf.size()) {
    uint64_t n = std::min<uint64_t>(buf.size(), bytes - done);  // CHUNK keeps the phase: a multiple of 4
    if (CUresult r = upload(ctx, dst + done, buf.data(), n); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// Sets `bytes` bytes at dst to the 32-bit pattern `word` (D8 and D16
// replicate theirs), byte k of the range taking byte (dst + k) % 4 of word.
CUresult memset_pattern(CUstream stream, CUdeviceptr dst, uint32_t word, uint64_t bytes, bool wait) {
  auto c = context_of(stream);
  if (!c) return c.error();
  CUctx_st* ctx = *c;
  auto p = resolve(ctx, dst, bytes);
  if (!p) return p.error();
  uint64_t head = std::min<uint64_t>((4 - dst % 4) % 4, bytes);
  uint64_t words = (bytes - head) / 4;
  // A NaN pattern goes by upload: the fill kernel stores floats.
  bool fill = words * 4 >= FILL_MIN_BYTES && !std::isnan(std::bit_cast<float>(word)) && words <= UINT32_MAX;
  if (!fill) return upload_pattern(ctx, dst, word, bytes);
  if (CUresult r = upload_pattern(ctx, dst, word, head); r != CUDA_SUCCESS) return r;
  uint64_t tail_at = dst + head + words * 4;
  if (CUresult r = upload_pattern(ctx, tail_at, word, dst + bytes - tail_at); r != CUDA_SUCCESS) return r;
  vgpu::cls::FillArgs args{dst + head, static_cast<uint32_t>(words), std::bit_cast<float>(word)};
  driver::LaunchShape shape{{static_cast<uint32_t>(std::min<uint64_t>((words + 255) / 256, 65535)), 1, 1}, {256, 1, 1}};
  auto f = ctx->drv->launch(vgpu::cls::Kernel::fill, std::as_bytes(std::span(&args, 1)), shape);
  if (!f) return vgpu::cuda::work_error(ctx, f.error());
  ctx->last = *f;
  return wait ? vgpu::cuda::wait(ctx, *f) : CUDA_SUCCESS;
}

uint32_t repeat8(unsigned char v) { return 0x01010101u * v; }
uint32_t repeat16(unsigned short v) { return 0x00010001u * v; }

}  // namespace

extern "C" {

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  auto lock = api_lock();
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto c = State::get().current();
  if (!c) return c.error();
  *free = State::get().device().vram_free();
  *total = State::get().device().vram_bytes();
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  auto lock = api_lock();
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  auto c = State::get().current();
  if (!c) return c.error();
  auto b = (*c)->drv->alloc_compute(bytesize);
  if (!b) return b.error().code == vgpu::Errc::out_of_memory ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
  auto va = (*c)->drv->gpu_va(*b);
  if (!va) return CUDA_ERROR_UNKNOWN;
  (*c)->allocs[*va] = {*b, bytesize};
  *dptr = *va;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  auto lock = api_lock();
  auto c = State::get().current(true);
  if (!c) return c.error();
  auto it = (*c)->allocs.find(dptr);
  if (it == (*c)->allocs.end() || it->second.module_data) return CUDA_ERROR_INVALID_VALUE;
  // Work still running may use it (CUDA's cuMemFree synchronises too).
  if ((*c)->sticky == CUDA_SUCCESS) (void)vgpu::cuda::synchronize(*c);
  (void)(*c)->drv->free(it->second.buffer);
  (*c)->allocs.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  auto lock = api_lock();
  auto c = State::get().current();
  if (!c) return c.error();
  auto p = resolve(*c, dptr, 0);
  if (!p) return CUDA_ERROR_NOT_FOUND;
  auto it = std::prev((*c)->allocs.upper_bound(dptr));
  if (pbase != nullptr) *pbase = it->first;
  if (psize != nullptr) *psize = it->second.bytes;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  auto lock = api_lock();
  if (pp == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  auto c = State::get().current();
  if (!c) return c.error();
  auto b = (*c)->drv->alloc_host(bytesize);
  if (b) {
    auto host = (*c)->drv->host_data(*b);
    if (!host) return CUDA_ERROR_UNKNOWN;
    *pp = host->data();
    (*c)->host_allocs[*pp] = {*b, bytesize};
    return CUDA_SUCCESS;
  }
  if (b.error().code != vgpu::Errc::unsupported) return CUDA_ERROR_OUT_OF_MEMORY;
  // A port without pinned memory: ordinary memory (copies through staging).
  *pp = std::aligned_alloc(4096, (bytesize + 4095) / 4096 * 4096);
  if (*pp == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  (*c)->host_allocs[*pp] = {driver::Buffer{}, bytesize};
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
  auto lock = api_lock();
  auto c = State::get().current(true);
  if (!c) return c.error();
  auto it = (*c)->host_allocs.find(p);
  if (it == (*c)->host_allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.buffer.id == 0)
    std::free(p);
  else
    (void)(*c)->drv->free(it->second.buffer);
  (*c)->host_allocs.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream) {
  auto lock = api_lock();
  auto c = context_of(hStream);
  return c ? upload(*c, dstDevice, srcHost, ByteCount) : c.error();
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  auto lock = api_lock();
  auto c = context_of(hStream);
  return c ? download(*c, dstHost, srcDevice, ByteCount) : c.error();
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
  auto lock = api_lock();
  auto c = context_of(hStream);
  return c ? copy(*c, dstDevice, srcDevice, ByteCount, false) : c.error();
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, nullptr);
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, nullptr);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  auto lock = api_lock();
  auto c = context_of(nullptr);
  return c ? copy(*c, dstDevice, srcDevice, ByteCount, true) : c.error();
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  auto lock = api_lock();
  return memset_pattern(hStream, dstDevice, repeat8(uc), N, false);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  auto lock = api_lock();
  if (dstDevice % 2 != 0) return CUDA_ERROR_INVALID_VALUE;
  return memset_pattern(hStream, dstDevice, repeat16(us), uint64_t{N} * 2, false);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  auto lock = api_lock();
  if (dstDevice % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  return memset_pattern(hStream, dstDevice, ui, uint64_t{N} * 4, false);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  auto lock = api_lock();
  return memset_pattern(nullptr, dstDevice, repeat8(uc), N, true);
}

CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  auto lock = api_lock();
  if (dstDevice % 2 != 0) return CUDA_ERROR_INVALID_VALUE;
  return memset_pattern(nullptr, dstDevice, repeat16(us), uint64_t{N} * 2, true);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  auto lock = api_lock();
  if (dstDevice % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  return memset_pattern(nullptr, dstDevice, ui, uint64_t{N} * 4, true);
}

}  // extern "C"
