// SPDX-License-Identifier: GPL-2.0-or-later
// Driver conformance inside the guest: the driver (driver/runtime.h) on the
// vgpu PCI device: open, transfers on both paths, buffer copies, every
// built-in kernel against gpu/kernels/reference.h, and the error paths.
// Sizes are small: the guest CPU is emulated and computes the references.
#include "conformance.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpu/kernels/reference.h"
#include "gpu_env.h"
#include "harness.h"
#include "vgpu/regs.h"

namespace vgpu::guest {
namespace {

namespace ref = gpu::kernels::reference;
using driver::Buffer;
using driver::DeviceOptions;

Status device_open() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Device& dev = *g->dev;
  if (auto ok = check(dev.info().chipset == regs::CHIPSET_GF100,
                      "BOOT_0 chipset " + std::to_string(dev.info().chipset) + ", expected GF100");
      !ok)
    return ok;
  const uint64_t vram = dev.vram_bytes();
  // run-guest passes the device's vram property as vgpu_vram_mib on the
  // kernel command line; the kernel hands it to /init as an environment variable.
  if (const char* mib = std::getenv("vgpu_vram_mib"); mib != nullptr) {
    const uint64_t want = std::strtoull(mib, nullptr, 10) * MiB;
    if (auto ok = check(vram == want, "VRAM " + std::to_string(vram) + " bytes, device has " + std::to_string(want));
        !ok)
      return ok;
  } else if (auto ok = check(vram != 0 && vram % MiB == 0, "VRAM " + std::to_string(vram) + " bytes"); !ok) {
    return ok;
  }
  const uint64_t t0 = dev.time_ns();
  usleep(2000);
  const uint64_t t1 = dev.time_ns();
  note("chipset GF100, VRAM " + std::to_string(vram / MiB) + " MiB, timer +" + std::to_string(t1 - t0) +
       " ns over a 2 ms sleep");
  return check(t1 > t0, "PTIMER did not advance: " + std::to_string(t0) + " then " + std::to_string(t1));
}

// Upload and download n floats with the given options; checks which path carried them.
Status round_trip(const DeviceOptions& options, size_t n, bool expect_direct) {
  auto g = open_gpu(options);
  if (!g) return std::unexpected(g.error());
  auto v = random_floats(n, 1);
  auto b = upload_new(*g->ctx, v);
  if (!b) return std::unexpected(b.error());
  auto back = download_all(*g->ctx, *b, n);
  if (!back) return std::unexpected(back.error());
  if (auto ok = check(std::memcmp(back->data(), v.data(), n * sizeof(float)) == 0, "downloaded data differ"); !ok)
    return ok;
  const driver::TransferStats& s = g->ctx->transfer_stats();
  const uint64_t bytes = 2 * n * sizeof(float);
  if (expect_direct)
    return check(s.direct_bytes == bytes && s.staged_bytes == 0,
                 "expected " + std::to_string(bytes) + " direct bytes, got direct " + std::to_string(s.direct_bytes) +
                     " staged " + std::to_string(s.staged_bytes));
  return check(s.staged_bytes == bytes && s.direct_bytes == 0,
               "expected " + std::to_string(bytes) + " staged bytes, got direct " + std::to_string(s.direct_bytes) +
                   " staged " + std::to_string(s.staged_bytes));
}

Status round_trip_bar1() { return round_trip({.direct_transfer_max = 1 * MiB}, 16384, true); }

Status round_trip_copy_engine() {
  return round_trip({.direct_transfer_max = 0, .staging_bytes = 16 * KiB}, 20000, false);  // 80 KB: 5 chunks
}

// A partial word at an unaligned offset inside a buffer.
Status round_trip_unaligned() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto b = upload_new(*g->ctx, random_floats(64, 2));
  if (!b) return std::unexpected(b.error());
  const std::byte three[3] = {std::byte{0x11}, std::byte{0x22}, std::byte{0x33}};
  if (auto ok = g->ctx->upload(*b, 5, three); !ok) return ok;
  std::byte back[3] = {};
  if (auto ok = g->ctx->download(*b, 5, back); !ok) return ok;
  return check(std::memcmp(back, three, sizeof three) == 0, "3 bytes at offset 5 did not round-trip");
}

Status buffer_copy() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto v = random_floats(5000, 4);
  auto a = upload_new(*g->ctx, v);
  auto b = g->ctx->alloc(v.size() * sizeof(float));
  if (!a || !b) return std::unexpected(!a ? a.error() : b.error());
  if (auto ok = finish(*g->ctx, g->ctx->copy(*b, 0, *a, 0, v.size() * sizeof(float)), "copy"); !ok) return ok;
  return download_compare(*g->ctx, *b, v, 0.0f, "copied buffer");
}

Status kernel_fill() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto b = g->ctx->alloc(1000 * sizeof(float));
  if (!b) return std::unexpected(b.error());
  if (auto ok = finish(*g->ctx, g->ctx->fill({*b, 1000, 2.5f}), "fill"); !ok) return ok;
  std::vector<float> want(1000);
  ref::fill(want, 2.5f);
  return download_compare(*g->ctx, *b, want, 0.0f, "fill");
}

Status kernel_saxpy() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto x = random_floats(4096, 5), y = random_floats(4096, 6);
  auto bx = upload_new(*g->ctx, x), by = upload_new(*g->ctx, y);
  if (!bx || !by) return std::unexpected(!bx ? bx.error() : by.error());
  if (auto ok = finish(*g->ctx, g->ctx->saxpy({*bx, *by, 4096, 0.75f}), "saxpy"); !ok) return ok;
  ref::saxpy(0.75f, x, y);
  return download_compare(*g->ctx, *by, y, 1e-6f, "saxpy");
}

Status kernel_madd() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const uint32_t rows = 64, cols = 48;
  auto a = random_floats(rows * cols, 7), b = random_floats(rows * cols, 8);
  auto ba = upload_new(*g->ctx, a), bb = upload_new(*g->ctx, b);
  auto bc = g->ctx->alloc(a.size() * sizeof(float));
  if (!ba || !bb || !bc) return std::unexpected(!ba ? ba.error() : !bb ? bb.error() : bc.error());
  if (auto ok = finish(*g->ctx, g->ctx->madd({*ba, *bb, *bc, rows, cols}), "madd"); !ok) return ok;
  std::vector<float> want(a.size());
  ref::madd(a, b, want);
  return download_compare(*g->ctx, *bc, want, 1e-6f, "madd");
}

Status kernel_sgemm() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const uint32_t m = 96, n = 80, k = 64;
  auto a = random_floats(m * k, 9), b = random_floats(k * n, 10), c = random_floats(m * n, 11);
  auto ba = upload_new(*g->ctx, a), bb = upload_new(*g->ctx, b), bc = upload_new(*g->ctx, c);
  if (!ba || !bb || !bc) return std::unexpected(!ba ? ba.error() : !bb ? bb.error() : bc.error());
  if (auto ok = finish(*g->ctx, g->ctx->sgemm({*ba, *bb, *bc, m, n, k, 1.5f, 0.5f}), "sgemm"); !ok) return ok;
  ref::sgemm(cls::SgemmArgs{0, 0, 0, m, n, k, 1.5f, 0.5f, 0}, a.data(), b.data(), c.data());
  return download_compare(*g->ctx, *bc, c, 1e-4f, "sgemm");
}

Status kernel_conv2d() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Conv2dParams p{.n = 2, .c = 3, .h = 16, .w = 16, .k = 4, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  auto in = random_floats(2 * 3 * 16 * 16, 12), filt = random_floats(4 * 3 * 3 * 3, 13);
  const size_t out_n = 2 * 4 * 16 * 16;
  auto bi = upload_new(*g->ctx, in), bf = upload_new(*g->ctx, filt);
  auto bo = g->ctx->alloc(out_n * sizeof(float));
  if (!bi || !bf || !bo) return std::unexpected(!bi ? bi.error() : !bf ? bf.error() : bo.error());
  p.input = *bi;
  p.filter = *bf;
  p.output = *bo;
  if (auto ok = finish(*g->ctx, g->ctx->conv2d(p), "conv2d"); !ok) return ok;
  std::vector<float> want(out_n);
  ref::conv2d(cls::Conv2dArgs{0, 0, 0, 2, 3, 16, 16, 4, 3, 3, 1, 1, 1, 1, 0}, in.data(), filt.data(), want.data());
  return download_compare(*g->ctx, *bo, want, 1e-4f, "conv2d");
}

Status kernel_mriq() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  const uint32_t nk = 64, nx = 128;
  std::vector<float> in[7] = {random_floats(nk, 14), random_floats(nk, 15), random_floats(nk, 16),
                              random_floats(nk, 17), random_floats(nx, 18), random_floats(nx, 19),
                              random_floats(nx, 20)};
  Buffer bufs[7];
  for (size_t i = 0; i < 7; ++i) {
    auto b = upload_new(ctx, in[i]);
    if (!b) return std::unexpected(b.error());
    bufs[i] = *b;
  }
  auto qr = ctx.alloc(nx * sizeof(float)), qi = ctx.alloc(nx * sizeof(float));
  if (!qr || !qi) return std::unexpected(!qr ? qr.error() : qi.error());
  const driver::MriqParams p{bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], *qr, *qi, nk, nx};
  if (auto ok = finish(ctx, ctx.mriq(p), "mriq"); !ok) return ok;
  std::vector<float> wr(nx), wi(nx);
  ref::mriq(nk, nx, in[0].data(), in[1].data(), in[2].data(), in[3].data(), in[4].data(), in[5].data(), in[6].data(),
            wr.data(), wi.data());
  auto gr = download_all(ctx, *qr, nx), gi = download_all(ctx, *qi, nx);
  if (!gr || !gi) return std::unexpected(!gr ? gr.error() : gi.error());
  if (auto ok = compare(*gr, wr, 1e-3f, "mriq qr"); !ok) return ok;
  return compare(*gi, wi, 1e-3f, "mriq qi");
}

// spin keeps the engine busy for its duration on the GPU's clock.
Status kernel_spin() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const uint64_t duration = 20'000'000;
  const uint64_t t0 = g->dev->time_ns();
  if (auto ok = finish(*g->ctx, g->ctx->spin({duration}), "spin"); !ok) return ok;
  const uint64_t t1 = g->dev->time_ns();
  return check(t1 - t0 >= duration, "a 20 ms spin finished after " + std::to_string(t1 - t0) + " ns of GPU time");
}

Status error_out_of_memory() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto b = g->ctx->alloc(g->dev->vram_bytes() + 1 * MiB);
  if (auto ok = expect_error(b ? nullptr : &b.error(), Errc::out_of_memory, "allocation beyond VRAM"); !ok) return ok;
  auto small = g->ctx->alloc(4096);  // the failure left the allocator usable
  return check(small.has_value(), "a 4 KiB allocation after the failure: " + (small ? "" : small.error().what()));
}

Status error_fence_timeout() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto f = g->ctx->spin({300'000'000});
  if (!f) return std::unexpected(f.error());
  auto r = g->ctx->wait(*f, 1'000'000);
  if (auto ok = expect_error(r ? nullptr : &r.error(), Errc::timeout, "1 ms wait on a 300 ms spin"); !ok) return ok;
  if (auto ok = check(r.error().message.find("channel") != std::string::npos,
                      "timeout message names no channel: " + r.error().message);
      !ok)
    return ok;
  return g->ctx->wait(*f);  // the spin still completes
}

Status error_invalid_handle() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& ctx = *g->ctx;
  auto unknown = ctx.size(Buffer{999});
  if (auto ok = expect_error(unknown ? nullptr : &unknown.error(), Errc::invalid_argument, "size of buffer 999"); !ok)
    return ok;
  auto zero = ctx.size(Buffer{});
  if (auto ok = expect_error(zero ? nullptr : &zero.error(), Errc::invalid_argument, "size of buffer 0"); !ok)
    return ok;
  auto b = ctx.alloc(4096);
  if (!b) return std::unexpected(b.error());
  if (auto ok = ctx.free(*b); !ok) return ok;
  auto freed = ctx.fill({*b, 16, 1.0f});
  if (auto ok = expect_error(freed ? nullptr : &freed.error(), Errc::not_found, "fill into a freed buffer"); !ok)
    return ok;
  auto small = ctx.alloc(64);
  if (!small) return std::unexpected(small.error());
  auto over = ctx.fill({*small, 1000, 1.0f});
  return expect_error(over ? nullptr : &over.error(), Errc::invalid_argument, "fill beyond a 64-byte buffer");
}

// A kernel on addresses nothing maps faults the channel: the wait reports
// device_error naming the channel, later launches too; a new context works.
Status error_after_channel_error() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const cls::SaxpyArgs args{0x1000, 0x2000, 64, 1.0f};
  auto f = g->ctx->launch(cls::Kernel::saxpy, std::as_bytes(std::span(&args, 1)), {});
  if (!f) return std::unexpected(f.error());
  auto r = g->ctx->wait(*f);
  if (auto ok = expect_error(r ? nullptr : &r.error(), Errc::device_error, "saxpy on unmapped addresses"); !ok)
    return ok;
  note(r.error().what());
  const std::string chan = "channel " + std::to_string(g->ctx->channel_id());
  if (auto ok = check(r.error().message.find(chan) != std::string::npos, "error names no " + chan); !ok) return ok;
  auto later = g->ctx->spin({1000});
  if (auto ok = expect_error(later ? nullptr : &later.error(), Errc::device_error, "launch after the error"); !ok)
    return ok;
  auto fresh = g->dev->create_context();
  if (!fresh) return std::unexpected(fresh.error().context("context after a channel error"));
  return finish(**fresh, (*fresh)->spin({1000}), "spin on a new context after a channel error");
}

Status two_contexts() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  auto other = g->dev->create_context();
  if (!other) return std::unexpected(other.error());
  if (auto ok = check((*other)->channel_id() != g->ctx->channel_id(), "two contexts share a channel"); !ok) return ok;
  auto b = (*other)->alloc(256 * sizeof(float));
  if (!b) return std::unexpected(b.error());
  if (auto ok = finish(**other, (*other)->fill({*b, 256, 7.0f}), "fill on the second context"); !ok) return ok;
  if (auto ok = download_compare(**other, *b, std::vector<float>(256, 7.0f), 0.0f, "second context's fill"); !ok)
    return ok;
  return finish(*g->ctx, g->ctx->spin({1000}), "spin on the first context");
}

// Pinned memory needs 2 MiB hugepages (driver/hugepage_pin.h): the test,
// as the guest's root, makes sure the pool has `count` of them.
void reserve_hugepages(unsigned count) {
  if (FILE* f = std::fopen("/proc/sys/vm/nr_hugepages", "r+")) {
    unsigned have = 0;
    if (std::fscanf(f, "%u", &have) != 1 || have < count) {
      std::rewind(f);
      std::fprintf(f, "%u\n", count);
    }
    std::fclose(f);
  }
}

// Large transfers go through the copy engine straight from and to pinned
// memory (DMA through sysmem PTEs to guest RAM), in passthrough and fv.
Status pinned_round_trip() {
  reserve_hugepages(8);
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  driver::Context& c = *g->ctx;
  constexpr uint64_t BYTES = 3 * MiB + 4100;
  auto pinned = c.alloc_host(BYTES);
  if (!pinned) return std::unexpected(pinned.error());
  auto host = c.host_data(*pinned);
  if (!host) return std::unexpected(host.error());
  auto dev = c.alloc(BYTES);
  if (!dev) return std::unexpected(dev.error());
  for (uint64_t i = 0; i < BYTES; ++i) (*host)[i] = std::byte(i * 7 + 3);
  // Through vgpud (run-guest --socket sets vgpu_sysmem=0) the device has no
  // system memory yet: the copy must end in a channel MMU fault.
  if (const char* sysmem = std::getenv("vgpu_sysmem"); sysmem != nullptr && std::string(sysmem) == "0") {
    auto st = c.upload(*dev, 0, std::span<const std::byte>(host->data(), BYTES));
    if (!st) note("no system memory: " + st.error().message);
    return check(!st && st.error().message.find("mmu_fault") != std::string::npos,
                 "a pinned transfer without system memory did not end in an MMU fault");
  }
  if (auto ok = c.upload(*dev, 0, std::span<const std::byte>(host->data(), BYTES)); !ok) return ok;
  std::memset(host->data(), 0, BYTES);
  if (auto ok = c.download(*dev, 0, std::span<std::byte>(host->data(), BYTES)); !ok) return ok;
  for (uint64_t i = 0; i < BYTES; ++i)
    if ((*host)[i] != std::byte(i * 7 + 3))
      return check(false, "pinned round trip differs at byte " + std::to_string(i));
  const driver::TransferStats& s = c.transfer_stats();
  note("pinned " + std::to_string(s.pinned_bytes) + " bytes, staged " + std::to_string(s.staged_bytes));
  return check(s.pinned_bytes == 2 * BYTES && s.staged_bytes == 0, "transfers did not take the pinned path");
}

// A sysmem PTE naming the top of the bus (no RAM there): the fill through
// it is a channel error (an MMU fault: dma_error in passthrough, a
// rejected shadow entry in fv), never an access.
Status dma_fault_outside_ram() {
  auto g = open_gpu();
  if (!g) return std::unexpected(g.error());
  const uint64_t page = fmt::VA_LIMIT - fmt::SMALL_PAGE;
  auto va = g->ctx->address_space().map_pages(std::span(&page, 1),
                                              fmt::pte::Flags{.aperture = fmt::Target::sysmem_noncoherent});
  // With the PV driver (vgpu_pv=1) the mediator checks the target when the
  // driver hands the mapping over: the map itself is refused.
  if (const char* pv = std::getenv("vgpu_pv"); !va && pv != nullptr && std::string(pv) == "1") {
    note(va.error().what());
    return check(va.error().message.find("target_refused") != std::string::npos,
                 "the PV map of a page outside RAM was not refused with target_refused");
  }
  if (!va) return std::unexpected(va.error());
  const cls::FillArgs args{*va, 1024, 1.0f};
  auto f = g->ctx->launch(cls::Kernel::fill, std::as_bytes(std::span(&args, 1)), {});
  if (!f) return std::unexpected(f.error());
  auto r = g->ctx->wait(*f);
  if (auto ok = expect_error(r ? nullptr : &r.error(), Errc::device_error, "fill through a sysmem PTE outside RAM");
      !ok)
    return ok;
  note(r.error().what());
  return check(r.error().message.find("mmu_fault") != std::string::npos, "the error is not an MMU fault");
}

constexpr TestCase TESTS[] = {
    {"device_open", Group::conformance, device_open},
    {"round_trip_bar1", Group::conformance, round_trip_bar1},
    {"round_trip_copy_engine", Group::conformance, round_trip_copy_engine},
    {"round_trip_unaligned", Group::conformance, round_trip_unaligned},
    {"buffer_copy", Group::conformance, buffer_copy},
    {"kernel_fill", Group::conformance, kernel_fill},
    {"kernel_saxpy", Group::conformance, kernel_saxpy},
    {"kernel_madd", Group::conformance, kernel_madd},
    {"kernel_sgemm", Group::conformance, kernel_sgemm},
    {"kernel_conv2d", Group::conformance, kernel_conv2d},
    {"kernel_mriq", Group::conformance, kernel_mriq},
    {"kernel_spin", Group::conformance, kernel_spin},
    {"error_out_of_memory", Group::conformance, error_out_of_memory},
    {"error_fence_timeout", Group::conformance, error_fence_timeout},
    {"error_invalid_handle", Group::conformance, error_invalid_handle},
    {"error_after_channel_error", Group::conformance, error_after_channel_error},
    {"two_contexts", Group::conformance, two_contexts},
    {"pinned_round_trip", Group::conformance, pinned_round_trip},
    {"dma_fault_outside_ram", Group::conformance, dma_fault_outside_ram},
};

}  // namespace

std::span<const TestCase> conformance_tests() { return TESTS; }

}  // namespace vgpu::guest
