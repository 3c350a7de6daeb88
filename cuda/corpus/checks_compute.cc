// SPDX-License-Identifier: GPL-2.0-or-later
// The runner's checks of the data-parallel kernels: vector_add, saxpy,
// matmul (with the timing line), reduce, scan, histogram, bitonic, stencil.
// All compare exactly: the float kernels either keep the reference's
// operation order (saxpy's fma, stencil's sums) or sum integer values.
#include <cstdio>

#include "cuda/corpus/corpus_layout.h"
#include "cuda/corpus/reference.h"
#include "cuda/corpus/runner_support.h"

namespace corpus {

void RunVectorAdd(const Context& ctx) {
  Module m = ctx.Load("vector_add");
  ref::Rng rng(101);
  int n = 10007;  // not a multiple of the block
  auto a = ref::RandomFloats(rng, n, -100.0f, 100.0f), b = ref::RandomFloats(rng, n, -100.0f, 100.0f);
  Buffer da(a), db(b), dc(a.size() * sizeof(float));
  Launch(m.Function("vectorAdd"), {Blocks(n, 256)}, {256}, {da.Arg(), db.Arg(), dc.Arg(), &n});
  ExpectEqual(dc.Download<float>(a.size()), ref::VectorAdd(a, b), "c");
}

void RunSaxpy(const Context& ctx) {
  Module m = ctx.Load("saxpy");
  ref::Rng rng(102);
  int n = 5000;
  float a = 1.75f;
  auto x = ref::RandomFloats(rng, n, -10.0f, 10.0f), y = ref::RandomFloats(rng, n, -10.0f, 10.0f);
  Buffer dx(x), dy(y);
  Launch(m.Function("saxpy"), {8}, {128}, {&n, &a, dx.Arg(), dy.Arg()});  // grid-stride: 1024 threads
  ExpectEqual(dy.Download<float>(y.size()), ref::Saxpy(a, x, y), "y");
}

void RunMatmul(const Context& ctx) {
  Module m = ctx.Load("matmul");
  ref::Rng rng(103);
  int rows = 70, cols = 50, inner = 40;  // none a multiple of 16: the edge tiles pad
  auto a = ref::SmallIntFloats(rng, rows * inner, -8, 8), b = ref::SmallIntFloats(rng, inner * cols, -8, 8);
  Buffer da(a), db(b), dc(static_cast<std::size_t>(rows * cols) * sizeof(float));
  constexpr unsigned T = kMatmulTile;
  CUfunction f = m.Function("matmul");
  CUevent start = nullptr, stop = nullptr;
  Check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  Check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  Check(cuEventRecord(start, nullptr), "cuEventRecord");
  Launch(f, {Blocks(cols, T), Blocks(rows, T)}, {T, T}, {da.Arg(), db.Arg(), dc.Arg(), &rows, &cols, &inner});
  Check(cuEventRecord(stop, nullptr), "cuEventRecord");
  Check(cuEventSynchronize(stop), "cuEventSynchronize");
  float ms = 0.0f;
  Check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  (void)cuEventDestroy(start);
  (void)cuEventDestroy(stop);
  std::printf("TIME matmul %dx%dx%d: %.3f ms\n", rows, cols, inner, static_cast<double>(ms));
  ExpectEqual(dc.Download<float>(static_cast<std::size_t>(rows * cols)), ref::Matmul(a, b, rows, cols, inner), "c");
}

void RunReduce(const Context& ctx) {
  Module m = ctx.Load("reduce");
  ref::Rng rng(104);
  int n = 20000;
  std::vector<unsigned> in(static_cast<std::size_t>(n));
  for (unsigned& v : in) v = static_cast<unsigned>(rng.Range(0, 1 << 20));
  unsigned blocks = Blocks(n, 2 * kReduceBlock);
  Buffer din(in), dpartial(blocks * sizeof(unsigned));
  Launch(m.Function("reduce"), {blocks}, {kReduceBlock}, {din.Arg(), dpartial.Arg(), &n});
  ExpectEqual(dpartial.Download<unsigned>(blocks), ref::BlockSums(in, kReduceBlock), "partial");
}

void RunScan(const Context& ctx) {
  Module m = ctx.Load("scan");
  ref::Rng rng(105);
  int n = 5000;
  auto in = ref::RandomInts(rng, n, -100, 100);
  int blocks = static_cast<int>(Blocks(n, kScanBlock));
  Buffer din(in), dout(in.size() * sizeof(int)), dsums(static_cast<std::size_t>(blocks) * sizeof(int)),
      dscanned(static_cast<std::size_t>(blocks) * sizeof(int));
  CUdeviceptr none = 0;
  CUfunction scan = m.Function("scan_block");
  Launch(scan, {static_cast<unsigned>(blocks)}, {kScanBlock}, {din.Arg(), dout.Arg(), dsums.Arg(), &n});
  Launch(scan, {1}, {kScanBlock}, {dsums.Arg(), dscanned.Arg(), &none, &blocks});
  Launch(m.Function("add_block_offsets"), {static_cast<unsigned>(blocks)}, {kScanBlock},
         {dout.Arg(), dscanned.Arg(), &n});
  ExpectEqual(dout.Download<int>(in.size()), ref::InclusiveScan(in), "out");
}

void RunHistogram(const Context& ctx) {
  Module m = ctx.Load("histogram");
  ref::Rng rng(106);
  int n = 50000;
  std::vector<unsigned char> data(static_cast<std::size_t>(n));
  for (unsigned char& d : data) d = static_cast<unsigned char>(rng.Range(0, 63) * rng.Range(0, 4));  // skewed
  Buffer ddata(data), dbins(std::vector<unsigned>(kHistBins, 0u));
  Launch(m.Function("histogram"), {16}, {256}, {ddata.Arg(), &n, dbins.Arg()});
  ExpectEqual(dbins.Download<unsigned>(kHistBins), ref::Histogram(data), "bins");
}

void RunBitonic(const Context& ctx) {
  Module m = ctx.Load("bitonic");
  ref::Rng rng(107);
  int n = 1024;
  auto v = ref::RandomInts(rng, n, -5000, 5000);
  Buffer dv(v);
  Launch(m.Function("bitonic_sort"), {1}, {static_cast<unsigned>(n / 2)}, {dv.Arg(), &n});
  ExpectEqual(dv.Download<int>(v.size()), ref::Sorted(v), "data");
}

void RunStencil(const Context& ctx) {
  Module m = ctx.Load("stencil");
  ref::Rng rng(108);
  int nx = 67, ny = 45, sweeps = 10;
  auto grid = ref::RandomFloats(rng, nx * ny, 0.0f, 1.0f);
  Buffer da(grid), db(grid.size() * sizeof(float));
  CUfunction f = m.Function("jacobi5");
  constexpr unsigned B = kStencilBlock;
  for (int s = 0; s < sweeps; ++s) {
    Buffer& from = s % 2 == 0 ? da : db;
    Buffer& to = s % 2 == 0 ? db : da;
    Launch(f, {Blocks(nx, B), Blocks(ny, B)}, {B, B}, {from.Arg(), to.Arg(), &nx, &ny});
    grid = ref::Jacobi5(grid, nx, ny);
  }
  ExpectEqual((sweeps % 2 == 0 ? da : db).Download<float>(grid.size()), grid, "grid");
}

}  // namespace corpus
