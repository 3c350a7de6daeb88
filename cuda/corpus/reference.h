// SPDX-License-Identifier: GPL-2.0-or-later
// reference.h: the corpus's input generators (fixed seeds) and the CPU
// reference of every kernel, in the kernels' own operation order where the
// result is floating point, so the runner compares exactly.
#ifndef VGPU_CUDA_CORPUS_REFERENCE_H
#define VGPU_CUDA_CORPUS_REFERENCE_H

#include <cstdint>
#include <vector>

#include "cuda/corpus/corpus_layout.h"

namespace corpus::ref {

// splitmix64: the same numbers with every compiler and library (the
// standard distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next();
  int Range(int lo, int hi);              // [lo, hi]
  float Uniform(float lo, float hi);      // [lo, hi), 24 random bits
  double UniformD(double lo, double hi);  // [lo, hi), 53 random bits

 private:
  std::uint64_t state_;
};

std::vector<float> RandomFloats(Rng& rng, int n, float lo, float hi);
std::vector<float> SmallIntFloats(Rng& rng, int n, int lo, int hi);  // integer-valued: any sum order is exact
std::vector<int> RandomInts(Rng& rng, int n, int lo, int hi);

// A CSR graph: row_ptr has vertices + 1 entries.
struct Csr {
  std::vector<int> row_ptr;
  std::vector<int> col_idx;
  [[nodiscard]] int Vertices() const { return static_cast<int>(row_ptr.size()) - 1; }
};
Csr RandomGraph(Rng& rng, int vertices, int max_degree);

std::vector<float> VectorAdd(const std::vector<float>& a, const std::vector<float>& b);
std::vector<float> Saxpy(float a, const std::vector<float>& x, const std::vector<float>& y);  // fmaf(a, x, y)
std::vector<float> Matmul(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k);
std::vector<float> MatmulTransposed(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k);
// Per-block sums of 2 * block elements each, as the reduce kernel writes them.
std::vector<unsigned> BlockSums(const std::vector<unsigned>& in, int block);
std::vector<int> InclusiveScan(const std::vector<int>& in);
std::vector<int> InclusiveScanBlocked(const std::vector<int>& in, int block);  // two passes, as on the device
std::vector<unsigned> Histogram(const std::vector<unsigned char>& data);
std::vector<int> Sorted(std::vector<int> v);
std::vector<int> BitonicSorted(std::vector<int> v);  // the kernel's network, sequentially
std::vector<int> BfsDistances(const Csr& g, int source);
std::vector<int> BfsDistancesByLevels(const Csr& g, int source);  // frontier by frontier, as on the device
std::vector<WarpOut> WarpReduce(const std::vector<int>& in);
std::vector<float> Jacobi5(const std::vector<float>& in, int nx, int ny);
double Horner(const std::vector<double>& coef, double x);  // fma from the highest coefficient down
double FibD(int n);                                        // recursive, in double
double FibIter(int n);

}  // namespace corpus::ref

#endif  // VGPU_CUDA_CORPUS_REFERENCE_H
