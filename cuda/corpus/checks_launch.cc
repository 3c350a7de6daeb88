// SPDX-License-Identifier: GPL-2.0-or-later
// The runner's checks of launch mechanics: params (every parameter layout,
// through kernelParams and through the packed `extra` buffer) and globals
// (__device__ and __constant__ variables through cuModuleGetGlobal).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuda/corpus/corpus_layout.h"
#include "cuda/corpus/reference.h"
#include "cuda/corpus/runner_support.h"

namespace corpus {
namespace {

using ull = unsigned long long;

// One set of parameter values and the out[] slots the kernel should write.
struct ParamValues {
  signed char i8;
  unsigned char u8;
  short i16;
  unsigned short u16;
  int i32;
  unsigned u32;
  long long i64;
  ull u64;
  float f32;
  double f64;
  CUdeviceptr ptr;
  Mixed mixed;
  CUdeviceptr out;

  [[nodiscard]] std::vector<ull> Expected(int deref) const {
    auto s = [](long long v) { return static_cast<ull>(v); };
    return {s(i8),
            u8,
            s(i16),
            u16,
            s(i32),
            u32,
            s(i64),
            u64,
            std::bit_cast<unsigned>(f32),
            std::bit_cast<ull>(f64),
            ptr,
            s(deref),
            s(mixed.c),
            std::bit_cast<ull>(mixed.d),
            s(mixed.s),
            s(mixed.i),
            std::bit_cast<unsigned>(mixed.f),
            s(mixed.ll),
            mixed.u};
  }
};

// Appends v at the next multiple of alignof(T): the packing a PTX .entry
// parameter list has (natural alignment, the struct at its own alignment).
template <typename T>
void Pack(std::vector<unsigned char>& buf, const T& v) {
  std::size_t at = (buf.size() + alignof(T) - 1) / alignof(T) * alignof(T);
  buf.resize(at + sizeof(T));
  std::memcpy(buf.data() + at, &v, sizeof(T));
}

template <typename... T>
std::vector<unsigned char> PackAll(const T&... v) {
  std::vector<unsigned char> buf;
  (Pack(buf, v), ...);
  return buf;
}

void LaunchPacked(CUfunction f, const ParamValues& p) {
  std::vector<unsigned char> buf = PackAll(p.i8, p.u8, p.i16, p.u16, p.i32, p.u32, p.i64, p.u64, p.f32, p.f64, p.ptr,
                                           p.mixed, p.out);
  std::size_t size = buf.size();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"  // cuda.h's CU_LAUNCH_PARAM_* are C casts
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
#pragma GCC diagnostic pop
  Check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra), "cuLaunchKernel (extra)");
  Check(cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace

void RunParams(const Context& ctx) {
  Module m = ctx.Load("params");
  CUfunction f = m.Function("params_all");
  int deref = 424242;
  Buffer dderef(std::vector<int>{deref}), dout(kSlotCount * sizeof(ull));
  ParamValues p{-5,
                250,
                -12345,
                54321,
                -123456789,
                4000000000u,
                -1234567890123LL,
                0xfedcba9876543210ull,
                -1.0e-3f,
                3.141592653589793,
                dderef.Ptr(),
                Mixed{-7, 2.718281828459045, -300, 77777, 0.5f, -9, 201},
                dout.Ptr()};
  // kernelParams: one pointer per parameter; the library takes sizes and
  // offsets from the PTX.
  dout.Upload(std::vector<ull>(kSlotCount, 0));
  Launch(f, {1}, {32},
         {&p.i8, &p.u8, &p.i16, &p.u16, &p.i32, &p.u32, &p.i64, &p.u64, &p.f32, &p.f64, &p.ptr, &p.mixed, &p.out});
  ExpectEqual(dout.Download<ull>(kSlotCount), p.Expected(deref), "kernelParams out");
  // extra: the same layout packed by hand, other values.
  ParamValues q{127,       1,    32767,   1,         2147483647,   1u,
                1LL << 62, 1ull, 6.0e30f, -1.0e-300, dderef.Ptr(), Mixed{100, -0.0, 32767, -1, -3.5f, 1LL << 40, 255},
                dout.Ptr()};
  dout.Upload(std::vector<ull>(kSlotCount, 0));
  LaunchPacked(f, q);
  ExpectEqual(dout.Download<ull>(kSlotCount), q.Expected(deref), "extra out");
}

void RunGlobals(const Context& ctx) {
  Module m = ctx.Load("globals");
  auto [table, table_bytes] = m.Global("g_table");
  auto [counter, counter_bytes] = m.Global("g_counter");
  auto [max, max_bytes] = m.Global("g_max");
  auto [scale, scale_bytes] = m.Global("c_scale");
  ExpectValue<std::size_t>(table_bytes, kGlobalTable * sizeof(float), "g_table size");
  ExpectValue<std::size_t>(counter_bytes, sizeof(unsigned), "g_counter size");
  ExpectValue<std::size_t>(max_bytes, sizeof(int), "g_max size");
  ExpectValue<std::size_t>(scale_bytes, 4 * sizeof(float), "c_scale size");
  ref::Rng rng(301);
  auto t = ref::RandomFloats(rng, kGlobalTable, -4.0f, 4.0f);
  std::vector<float> s{0.5f, -2.0f, 3.0f, 0.125f};
  unsigned zero = 0;
  int minus_one = -1;
  Check(cuMemcpyHtoD(table, t.data(), table_bytes), "cuMemcpyHtoD g_table");
  Check(cuMemcpyHtoD(scale, s.data(), scale_bytes), "cuMemcpyHtoD c_scale");
  Check(cuMemcpyHtoD(counter, &zero, sizeof zero), "cuMemcpyHtoD g_counter");
  Check(cuMemcpyHtoD(max, &minus_one, sizeof minus_one), "cuMemcpyHtoD g_max");
  Buffer dout(kGlobalTable * sizeof(float));
  Launch(m.Function("globals_rw"), {2}, {64}, {dout.Arg()});  // 128 threads, 64 in range
  std::vector<float> want(t.size()), after(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    want[i] = t[i] * s[i % 4];
    after[i] = static_cast<float>(i);
  }
  ExpectEqual(dout.Download<float>(t.size()), want, "out");
  std::vector<float> table_now(t.size());
  unsigned counter_now = 0;
  int max_now = 0;
  Check(cuMemcpyDtoH(table_now.data(), table, table_bytes), "cuMemcpyDtoH g_table");
  Check(cuMemcpyDtoH(&counter_now, counter, sizeof counter_now), "cuMemcpyDtoH g_counter");
  Check(cuMemcpyDtoH(&max_now, max, sizeof max_now), "cuMemcpyDtoH g_max");
  ExpectEqual(table_now, after, "g_table after");
  ExpectValue(counter_now, static_cast<unsigned>(kGlobalTable), "g_counter (atom.inc)");
  ExpectValue(max_now, kGlobalTable - 1, "g_max (atom.max)");
}

}  // namespace corpus
