// SPDX-License-Identifier: GPL-2.0-or-later
#include "tests/testing/moving_vgpu.h"

#include <gtest/gtest.h>

#include <cstring>

#include "testbed/testing/testbeds.h"

namespace vgpu::mediator::moving {

std::unique_ptr<testbed::Testbed> make_testbed(uint64_t vram) { return make_testbed(testbed::Mode::fv_naive, vram); }

std::unique_ptr<testbed::Testbed> make_testbed(testbed::Mode mode, uint64_t vram) {
  return testing::create_testbed(testing::one_vm(mode, vram, VM_CHANNELS));
}

void copy_partition(testbed::Testbed& from, testbed::Testbed& to) {
  const shadow::Partition& a = from.vgpu(0)->partition();
  const shadow::Partition& b = to.vgpu(0)->partition();
  ASSERT_EQ(a.size, b.size);
  std::memcpy(to.host()->gpu().vram().data() + b.base, from.host()->gpu().vram().data() + a.base, a.size);
}

Status GuestContext::open_context(driver::Port& port) {
  auto d = driver::Device::open(port);
  if (!d) return std::unexpected(d.error());
  dev = std::move(*d);
  auto c = dev->create_context();
  if (!c) return std::unexpected(c.error());
  ctx = std::move(*c);
  return {};
}

Status Chain::open(driver::Port& port) {
  if (Status s = open_context(port); !s) return s;
  auto bx = ctx->alloc(N * sizeof(float)), by = ctx->alloc(N * sizeof(float));
  if (!bx || !by) return std::unexpected(bx ? by.error() : bx.error());
  x = *bx;
  y = *by;
  std::vector<float> xs(N), ys(N, 0.0f);
  for (uint32_t i = 0; i < N; ++i) xs[i] = static_cast<float>(i % 97) * 0.25f + 0.5f;
  if (Status s = ctx->upload(x, std::span<const float>(xs)); !s) return s;
  return ctx->upload(y, std::span<const float>(ys));
}

Status Chain::submit(int jobs) {
  for (int k = 0; k < jobs; ++k)
    if (auto f = ctx->saxpy({x, y, N, 1.5f}); !f) return std::unexpected(f.error());
  return {};
}

Result<std::vector<std::byte>> Chain::result() {
  if (Status s = ctx->synchronize(); !s) return std::unexpected(s.error());
  std::vector<std::byte> out(N * sizeof(float));
  if (Status s = ctx->download(y, 0, out); !s) return std::unexpected(s.error());
  return out;
}

Status Chain::ends_as(const std::vector<std::byte>& want) {
  Result<std::vector<std::byte>> got = result();
  if (!got) return std::unexpected(got.error());
  if (*got != want) return fail(Errc::device_error, "the moved chain's output differs from the unmoved one's");
  return {};
}

Result<std::vector<std::byte>> unmoved_output(int jobs) {
  auto tb = make_testbed();
  if (!tb) return fail(Errc::device_error, "the unmoved testbed");
  Chain reference;
  if (Status s = reference.open(tb->port(0)); !s) return std::unexpected(s.error());
  if (Status s = reference.submit(jobs); !s) return std::unexpected(s.error());
  return reference.result();
}

Status move_vgpu(testbed::Testbed& from, testbed::Testbed& to) {
  Result<std::vector<uint8_t>> image = from.vgpu(0)->export_image();
  if (!image) return std::unexpected(image.error());
  copy_partition(from, to);
  return to.vgpu(0)->import_image(*image);
}

}  // namespace vgpu::mediator::moving
