// SPDX-License-Identifier: GPL-2.0-or-later
// params: one parameter of every kind (i8 .. f64, a pointer, a struct by
// value with padding) written back field by field to out[], one unsigned
// long long per field (corpus::ParamSlot), so the host can check that the
// launch placed every parameter at its offset.
#include "vgpu_cuda.h"
#include "corpus_layout.h"

using ull = unsigned long long;

extern "C" __global__ void params_all(signed char i8, unsigned char u8, short i16, unsigned short u16, int i32,
                                      unsigned u32, long long i64, unsigned long long u64, float f32, double f64,
                                      const int* ptr, corpus::Mixed mixed, ull* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  out[corpus::kSlotI8] = static_cast<ull>(static_cast<long long>(i8));
  out[corpus::kSlotU8] = u8;
  out[corpus::kSlotI16] = static_cast<ull>(static_cast<long long>(i16));
  out[corpus::kSlotU16] = u16;
  out[corpus::kSlotI32] = static_cast<ull>(static_cast<long long>(i32));
  out[corpus::kSlotU32] = u32;
  out[corpus::kSlotI64] = static_cast<ull>(i64);
  out[corpus::kSlotU64] = u64;
  out[corpus::kSlotF32Bits] = __float_as_uint(f32);
  out[corpus::kSlotF64Bits] = static_cast<ull>(__double_as_longlong(f64));
  out[corpus::kSlotPtr] = reinterpret_cast<ull>(ptr);
  out[corpus::kSlotPtrDeref] = static_cast<ull>(static_cast<long long>(*ptr));
  out[corpus::kSlotMixedC] = static_cast<ull>(static_cast<long long>(mixed.c));
  out[corpus::kSlotMixedDBits] = static_cast<ull>(__double_as_longlong(mixed.d));
  out[corpus::kSlotMixedS] = static_cast<ull>(static_cast<long long>(mixed.s));
  out[corpus::kSlotMixedI] = static_cast<ull>(static_cast<long long>(mixed.i));
  out[corpus::kSlotMixedFBits] = __float_as_uint(mixed.f);
  out[corpus::kSlotMixedLL] = static_cast<ull>(mixed.ll);
  out[corpus::kSlotMixedU] = mixed.u;
}
