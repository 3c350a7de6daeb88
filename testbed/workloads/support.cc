// SPDX-License-Identifier: GPL-2.0-or-later
#include "testbed/workloads/support.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "common/text.h"

namespace vgpu::testbed::workloads {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t FNV_OFFSET = 0xcbf29ce484222325ull;
constexpr uint64_t FNV_PRIME = 0x100000001b3ull;

}  // namespace

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  uint64_t state = seed;
  const float scale = (hi - lo) / 16777216.f;  // 24 random bits
  for (auto& x : v) x = lo + static_cast<float>(splitmix64(state) >> 40) * scale;
  return v;
}

uint64_t hash_bytes(std::span<const std::byte> bytes) {
  uint64_t h = FNV_OFFSET;
  const size_t words = bytes.size() / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i * 8, 8);
    h = (h ^ w) * FNV_PRIME;
  }
  for (size_t i = words * 8; i < bytes.size(); ++i) h = (h ^ static_cast<uint64_t>(bytes[i])) * FNV_PRIME;
  return h;
}

std::vector<size_t> sample_indices(size_t n, size_t count, uint64_t seed) {
  std::vector<size_t> out;
  if (n <= count) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  uint64_t state = seed ^ 0x5a5a5a5aull;
  out.push_back(0);
  out.push_back(n - 1);  // both ends, then random ones
  while (out.size() < count) out.push_back(static_cast<size_t>(splitmix64(state) % n));
  return out;
}

Result<driver::Buffer> upload_new(driver::Context& ctx, std::span<const float> data) {
  auto b = ctx.alloc(data.size_bytes());
  if (!b) return b;
  if (auto s = ctx.upload(*b, data); !s) return std::unexpected(s.error());
  return b;
}

Result<driver::Buffer> alloc_zeroed(driver::Context& ctx, size_t floats) {
  const std::vector<float> zeros(floats, 0.f);
  return upload_new(ctx, zeros);
}

Result<TwoInputs> upload_two(driver::Context& ctx, std::span<const float> a, std::span<const float> b,
                             size_t out_floats) {
  auto ba = upload_new(ctx, a);
  if (!ba) return std::unexpected(ba.error());
  auto bb = upload_new(ctx, b);
  if (!bb) return std::unexpected(bb.error());
  auto out = ctx.alloc(out_floats * sizeof(float));
  if (!out) return std::unexpected(out.error());
  return TwoInputs{*ba, *bb, *out};
}

Result<uint32_t> launched_and_waited(driver::Context& ctx, Result<driver::Fence> launched) {
  if (!launched) return std::unexpected(launched.error());
  if (Status st = ctx.wait(*launched); !st) return std::unexpected(st.error());
  return 1u;
}

std::string SampleCheck::summary() const {
  if (failed == 0) return strfmt("%zu sampled outputs within tolerance (worst %.2e)", checked, max_err);
  return strfmt("%zu of %zu sampled outputs out of tolerance, first at index %zu (worst %.2e)", failed, checked,
                first_bad, max_err);
}

Reference sgemm_reference(std::span<const float> a, std::span<const float> b, size_t k, size_t n, size_t i) {
  const size_t row = i / n, col = i % n;
  Reference ref{0, 0};
  for (size_t kk = 0; kk < k; ++kk) {
    const double t = double{a[row * k + kk]} * double{b[kk * n + col]};
    ref.value += t;
    ref.abs_sum += std::abs(t);
  }
  return ref;
}

SampleCheck check_sampled(std::span<const float> got, std::span<const size_t> indices,
                          const std::function<Reference(size_t)>& want, double rel, double abs_floor) {
  SampleCheck c;
  for (size_t i : indices) {
    if (i >= got.size()) continue;
    const Reference r = want(i);
    const double err = std::abs(double{got[i]} - r.value);
    ++c.checked;
    c.max_err = std::max(c.max_err, err / (r.abs_sum + 1.0));
    if (!(err <= rel * r.abs_sum + abs_floor)) {  // NaN fails
      if (c.failed++ == 0) c.first_bad = i;
    }
  }
  return c;
}

Status untimed_launch(driver::Context& ctx, Result<driver::Fence> launched) {
  if (!launched) return std::unexpected(launched.error().context("untimed first launch"));
  return ctx.wait(*launched);
}

}  // namespace vgpu::testbed::workloads
