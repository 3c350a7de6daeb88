// SPDX-License-Identifier: GPL-2.0-or-later
#include "gpu/kernels/footprint.h"

#include <climits>
#include <cstring>
#include <initializer_list>

#include "gpu/kernels/checked.h"
#include "gpu/kernels/kernels.h"

namespace vgpu::gpu::kernels {
namespace {

constexpr uint64_t FLOAT_BYTES = sizeof(float);
constexpr uint64_t BLAS_INT_MAX = INT_MAX;

struct Use {
  const char* name;
  uint64_t va;
  std::optional<uint64_t> bytes;
  Access access;
};

std::optional<KernelFootprint> make(std::initializer_list<Use> uses) {
  KernelFootprint fp;
  for (const Use& u : uses) {
    if (!u.bytes || fp.count == KernelFootprint::MAX_BUFFERS) return std::nullopt;
    fp.items[fp.count++] = BufferUse{u.name, u.va, *u.bytes, u.access};
  }
  return fp;
}

std::optional<uint64_t> floats(std::optional<uint64_t> elements) { return checked::mul(elements, FLOAT_BYTES); }

}  // namespace

uint64_t KernelFootprint::traffic_bytes() const {
  uint64_t total = 0;
  for (const BufferUse& b : buffers()) {
    total = checked::add_sat(total, b.bytes);
    if (b.access == Access::read_write) total = checked::add_sat(total, b.bytes);
  }
  return total;
}

bool sgemm_args_valid(const cls::SgemmArgs& a) {
  return a.m <= BLAS_INT_MAX && a.n <= BLAS_INT_MAX && a.k <= BLAS_INT_MAX;
}

bool conv2d_args_valid(const cls::Conv2dArgs& a) {
  const uint64_t p = conv2d_out_h(a);
  const uint64_t q = conv2d_out_w(a);
  if (p == 0 || q == 0) return false;
  const auto crs = checked::mul(checked::mul(a.c, a.r), a.s);
  const auto pq = checked::mul(p, q);
  return a.k <= BLAS_INT_MAX && crs && *crs <= BLAS_INT_MAX && pq && *pq <= BLAS_INT_MAX;
}

std::optional<KernelFootprint> footprint(const cls::FillArgs& a) {
  return make({{"dst", a.dst, floats(a.count), Access::write}});
}

std::optional<KernelFootprint> footprint(const cls::SaxpyArgs& a) {
  return make({{"x", a.x, floats(a.n), Access::read}, {"y", a.y, floats(a.n), Access::read_write}});
}

std::optional<KernelFootprint> footprint(const cls::MaddArgs& a) {
  const auto bytes = floats(checked::mul(a.rows, a.cols));
  return make({{"a", a.a, bytes, Access::read}, {"b", a.b, bytes, Access::read}, {"c", a.c, bytes, Access::write}});
}

std::optional<KernelFootprint> footprint(const cls::SgemmArgs& a) {
  if (!sgemm_args_valid(a)) return std::nullopt;
  // C is read unless beta == 0 (the BLAS convention), and always written.
  return make({{"a", a.a, floats(checked::mul(a.m, a.k)), Access::read},
               {"b", a.b, floats(checked::mul(a.k, a.n)), Access::read},
               {"c", a.c, floats(checked::mul(a.m, a.n)), a.beta == 0.0f ? Access::write : Access::read_write}});
}

std::optional<KernelFootprint> footprint(const cls::Conv2dArgs& a) {
  if (!conv2d_args_valid(a)) return std::nullopt;
  const uint64_t p = conv2d_out_h(a);
  const uint64_t q = conv2d_out_w(a);
  const auto in = checked::mul(checked::mul(checked::mul(a.n, a.c), a.h), a.w);
  const auto filter = checked::mul(checked::mul(checked::mul(a.k, a.c), a.r), a.s);
  const auto out = checked::mul(checked::mul(checked::mul(a.n, a.k), p), q);
  return make({{"input", a.input, floats(in), Access::read},
               {"filter", a.filter, floats(filter), Access::read},
               {"output", a.output, floats(out), Access::write}});
}

std::optional<KernelFootprint> footprint(const cls::MriqArgs& a) {
  const auto k = floats(a.num_k);
  const auto x = floats(a.num_x);
  return make({{"kx", a.kx, k, Access::read},
               {"ky", a.ky, k, Access::read},
               {"kz", a.kz, k, Access::read},
               {"phi_mag", a.phi_mag, k, Access::read},
               {"x", a.x, x, Access::read},
               {"y", a.y, x, Access::read},
               {"z", a.z, x, Access::read},
               {"qr", a.qr, x, Access::write},
               {"qi", a.qi, x, Access::write}});
}

std::optional<KernelFootprint> footprint(const cls::SpinArgs&) { return KernelFootprint{}; }

namespace {

template <typename Args>
std::optional<KernelFootprint> decode(std::span<const std::byte> bytes) {
  Args args;
  std::memcpy(&args, bytes.data(), sizeof args);
  return footprint(args);
}

struct KernelRow {
  cls::Kernel kernel;
  size_t size;
  std::optional<KernelFootprint> (*footprint)(std::span<const std::byte>);
};

constexpr KernelRow KERNELS[] = {
    {cls::Kernel::fill, sizeof(cls::FillArgs), decode<cls::FillArgs>},
    {cls::Kernel::saxpy, sizeof(cls::SaxpyArgs), decode<cls::SaxpyArgs>},
    {cls::Kernel::madd, sizeof(cls::MaddArgs), decode<cls::MaddArgs>},
    {cls::Kernel::sgemm, sizeof(cls::SgemmArgs), decode<cls::SgemmArgs>},
    {cls::Kernel::conv2d, sizeof(cls::Conv2dArgs), decode<cls::Conv2dArgs>},
    {cls::Kernel::mriq, sizeof(cls::MriqArgs), decode<cls::MriqArgs>},
    {cls::Kernel::spin, sizeof(cls::SpinArgs), decode<cls::SpinArgs>},
};

const KernelRow* find(cls::Kernel kernel) {
  for (const KernelRow& row : KERNELS)
    if (row.kernel == kernel) return &row;
  return nullptr;
}

}  // namespace

size_t args_size(cls::Kernel kernel) {
  const KernelRow* row = find(kernel);
  return row ? row->size : 0;
}

std::optional<KernelFootprint> footprint(cls::Kernel kernel, std::span<const std::byte> args) {
  const KernelRow* row = find(kernel);
  if (!row || args.size() < row->size) return std::nullopt;
  return row->footprint(args);
}

}  // namespace vgpu::gpu::kernels
