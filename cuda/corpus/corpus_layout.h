// SPDX-License-Identifier: GPL-2.0-or-later
// corpus_layout.h: the types and sizes the corpus kernels and the runner
// share. Plain C++ with no CUDA in it: the .cu files and corpus_runner.cc
// both include it, so a layout cannot drift between device and host.
#ifndef VGPU_CUDA_CORPUS_CORPUS_LAYOUT_H
#define VGPU_CUDA_CORPUS_CORPUS_LAYOUT_H

namespace corpus {

constexpr int kMatmulTile = 16;    // matmul: 16x16 tiles, 16x16 blocks
constexpr int kReduceBlock = 256;  // reduce: threads per block
constexpr int kScanBlock = 256;    // scan: threads (= elements) per block
constexpr int kHistBins = 256;     // histogram: one bin per byte value
constexpr int kBitonicMax = 2048;  // bitonic: elements in shared memory (2 per thread)
constexpr int kStencilBlock = 16;  // stencil: 16x16 blocks
constexpr int kGlobalTable = 64;   // globals: g_table's length

// warp: what each warp writes, one record per warp.
struct WarpOut {
  int sum_xor;       // butterfly reduction (shfl.sync.bfly)
  int sum_down;      // tree reduction (shfl.sync.down), lane 0's value
  int lane0;         // lane 0's value broadcast (shfl.sync.idx)
  unsigned ballot;   // lanes whose value is odd (vote.sync.ballot)
  int all_positive;  // vote.sync.all
  int any_over;      // vote.sync.any: a value over 1000
};

// list_walk: one node; next is a device address.
struct Node {
  Node* next;
  long long value;
};

// params: a struct by value with mixed fields and padding.
struct Mixed {
  char c;           // offset 0
  double d;         // 8
  short s;          // 16
  int i;            // 20
  float f;          // 24
  long long ll;     // 32 (28..31 padding)
  unsigned char u;  // 40, size 48
};
static_assert(sizeof(Mixed) == 48, "Mixed: 48 bytes on LP64");

// params: out[] is one unsigned long long per field, in this order.
enum ParamSlot : int {
  kSlotI8,
  kSlotU8,
  kSlotI16,
  kSlotU16,
  kSlotI32,
  kSlotU32,
  kSlotI64,
  kSlotU64,
  kSlotF32Bits,
  kSlotF64Bits,
  kSlotPtr,
  kSlotPtrDeref,
  kSlotMixedC,
  kSlotMixedDBits,
  kSlotMixedS,
  kSlotMixedI,
  kSlotMixedFBits,
  kSlotMixedLL,
  kSlotMixedU,
  kSlotCount
};

}  // namespace corpus

#endif  // VGPU_CUDA_CORPUS_CORPUS_LAYOUT_H
