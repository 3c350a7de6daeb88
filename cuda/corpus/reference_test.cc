// SPDX-License-Identifier: GPL-2.0-or-later
// The corpus's CPU references checked against a second algorithm or known
// values, so that a FAIL from the runner points at the device, not here.
#include "cuda/corpus/reference.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace corpus::ref {
namespace {

TEST(CorpusRng, SameSeedSameNumbers) {
  Rng a(7), b(7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(CorpusRng, RangeStaysInBounds) {
  Rng rng(1);
  for (int i = 0; i < 10000; ++i) {
    int v = rng.Range(-3, 5);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 5);
  }
}

TEST(CorpusReference, MatmulOfIntegerValuesMatchesTransposedOrder) {
  Rng rng(2);
  auto a = SmallIntFloats(rng, 7 * 5, -8, 8);
  auto b = SmallIntFloats(rng, 5 * 9, -8, 8);
  EXPECT_EQ(Matmul(a, b, 7, 9, 5), MatmulTransposed(a, b, 7, 9, 5));
}

TEST(CorpusReference, BlockSumsAddUpToTheTotal) {
  Rng rng(3);
  std::vector<unsigned> in(1000);
  unsigned total = 0;
  for (unsigned& v : in) total += v = static_cast<unsigned>(rng.Range(0, 1000));
  auto sums = BlockSums(in, 64);
  ASSERT_EQ(sums.size(), 8u);  // 128 elements per block
  unsigned again = 0;
  for (unsigned s : sums) again += s;
  EXPECT_EQ(again, total);
}

TEST(CorpusReference, BlockedScanMatchesSequentialScan) {
  Rng rng(4);
  auto in = RandomInts(rng, 1000, -50, 50);
  EXPECT_EQ(InclusiveScanBlocked(in, 256), InclusiveScan(in));
}

TEST(CorpusReference, HistogramCountsEveryByte) {
  std::vector<unsigned char> data{0, 1, 1, 255, 255, 255};
  auto bins = Histogram(data);
  EXPECT_EQ(bins[0], 1u);
  EXPECT_EQ(bins[1], 2u);
  EXPECT_EQ(bins[255], 3u);
}

TEST(CorpusReference, BitonicNetworkSorts) {
  Rng rng(5);
  auto v = RandomInts(rng, 1024, -1000, 1000);
  EXPECT_EQ(BitonicSorted(v), Sorted(v));
}

TEST(CorpusReference, BfsByLevelsMatchesQueueBfs) {
  Rng rng(6);
  Csr g = RandomGraph(rng, 500, 4);
  EXPECT_EQ(BfsDistancesByLevels(g, 0), BfsDistances(g, 0));
}

TEST(CorpusReference, WarpReduceSumsEachWarp) {
  std::vector<int> in(64, 1);
  in[33] = 2000;
  auto out = WarpReduce(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sum_xor, 32);
  EXPECT_EQ(out[0].ballot, 0xffffffffu);
  EXPECT_EQ(out[0].any_over, 0);
  EXPECT_EQ(out[1].sum_down, 31 + 2000);
  EXPECT_EQ(out[1].ballot, 0xfffffffdu);
  EXPECT_EQ(out[1].any_over, 1);
}

TEST(CorpusReference, JacobiKeepsAConstantField) {
  std::vector<float> in(12 * 10, 3.5f);
  EXPECT_EQ(Jacobi5(in, 12, 10), in);
}

TEST(CorpusReference, HornerEvaluatesAPolynomial) {
  EXPECT_EQ(Horner({1.0, 2.0, 3.0}, 2.0), 17.0);  // 1 + 2x + 3x^2
}

TEST(CorpusReference, RecursiveFibMatchesIterativeFib) {
  for (int n = 0; n < 20; ++n) EXPECT_EQ(FibD(n), FibIter(n)) << n;
  EXPECT_EQ(FibD(15), 610.0);
}

}  // namespace
}  // namespace corpus::ref
