// SPDX-License-Identifier: GPL-2.0-or-later
// Coverage for libFuzzer from code that GCC compiled (docs/fuzzing.md).
// Debian 12's clang-14 cannot compile libstdc++ 12's <expected>, which
// every vgpu library uses, so the fuzz targets are built by GCC with
// -fsanitize-coverage=trace-pc: one call per basic block. libFuzzer 14 no
// longer reads that form itself, so this file turns each call into a hit
// of an 8-bit counter (one per hashed block address) and hands the
// counters to libFuzzer as inline 8-bit counters, the form it does read.
// Linked before libFuzzer's archive, with --allow-multiple-definition, so
// this __sanitizer_cov_trace_pc replaces libFuzzer's refusing one.
#include <cstddef>
#include <cstdint>

extern "C" void __sanitizer_cov_8bit_counters_init(uint8_t* start, uint8_t* stop);
extern "C" void __sanitizer_cov_pcs_init(const uintptr_t* begin, const uintptr_t* end);

namespace {

constexpr size_t COUNTERS = size_t{1} << 18;  // hashed blocks: collisions stay rare below ~50k blocks
uint8_t counters[COUNTERS];
// libFuzzer's PC table: (pc, flags) per counter; the "pc" is the counter's
// index, which is all its coverage figures need.
uintptr_t pcs[2 * COUNTERS];

struct Register {
  __attribute__((no_sanitize_coverage)) Register() {
    for (size_t i = 0; i < COUNTERS; ++i) pcs[2 * i] = i + 1;
    __sanitizer_cov_8bit_counters_init(counters, counters + COUNTERS);
    __sanitizer_cov_pcs_init(pcs, pcs + 2 * COUNTERS);
  }
} register_counters;

}  // namespace

extern "C" __attribute__((no_sanitize_coverage, no_sanitize_address, no_sanitize_undefined)) void
__sanitizer_cov_trace_pc() {
  const auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  ++counters[(pc ^ (pc >> 17)) & (COUNTERS - 1)];
}
