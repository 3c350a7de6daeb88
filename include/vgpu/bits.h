// SPDX-License-Identifier: GPL-2.0-or-later
// Typed bit fields and register names. Every offset and bit in vgpu is
// declared once with these, in regs.h and formats.h.
#pragma once

#include <cstdint>

namespace vgpu {

// A 32-bit register at a fixed BAR0 offset.
struct Reg32 {
  uint32_t offset;
  constexpr bool operator==(const Reg32&) const = default;
};

// A register array: base + index * stride, index < count.
struct RegArray32 {
  uint32_t base;
  uint32_t stride;
  uint32_t count;
  constexpr Reg32 operator[](uint32_t index) const { return Reg32{base + index * stride}; }
  constexpr bool contains(uint32_t offset) const {
    return offset >= base && offset < base + stride * count && (offset - base) % stride == 0;
  }
  constexpr uint32_t index_of(uint32_t offset) const { return (offset - base) / stride; }
};

// Bits Hi..Lo (inclusive) of a word of type T.
template <unsigned Hi, unsigned Lo, typename T = uint32_t>
struct Field {
  static_assert(Hi >= Lo, "field bits are hi:lo");
  static_assert(Hi < sizeof(T) * 8, "field beyond word width");
  static constexpr unsigned hi = Hi;
  static constexpr unsigned lo = Lo;
  static constexpr unsigned width = Hi - Lo + 1;
  static constexpr T max = width >= sizeof(T) * 8 ? static_cast<T>(~T{0}) : static_cast<T>((T{1} << width) - 1);
  static constexpr T mask = static_cast<T>(max << Lo);

  static constexpr T get(T word) { return static_cast<T>((word & mask) >> Lo); }
  static constexpr T make(T value) { return static_cast<T>((value << Lo) & mask); }
  static constexpr T set(T word, T value) { return static_cast<T>((word & ~mask) | make(value)); }
  static constexpr bool fits(uint64_t value) { return value <= max; }
};

template <unsigned B, typename T = uint32_t>
using Bit = Field<B, B, T>;

template <unsigned Hi, unsigned Lo>
using Field64 = Field<Hi, Lo, uint64_t>;

template <unsigned B>
using Bit64 = Field<B, B, uint64_t>;

constexpr uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
constexpr uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
constexpr uint64_t join64(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t GiB = 1024 * MiB;

constexpr bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
constexpr uint64_t align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }

}  // namespace vgpu
