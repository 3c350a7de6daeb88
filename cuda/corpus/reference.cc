// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/corpus/reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <numeric>
#include <utility>

namespace corpus::ref {

namespace {

std::size_t Index(int i) { return static_cast<std::size_t>(i); }

}  // namespace

std::uint64_t Rng::Next() {
  state_ += 0x9e3779b97f4a7c15ull;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int Rng::Range(int lo, int hi) {
  auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo + 1);
  return static_cast<int>(lo + static_cast<std::int64_t>(Next() % span));
}

float Rng::Uniform(float lo, float hi) {
  float unit = static_cast<float>(Next() >> 40) * 0x1p-24f;
  return lo + (hi - lo) * unit;
}

double Rng::UniformD(double lo, double hi) {
  double unit = static_cast<double>(Next() >> 11) * 0x1p-53;
  return lo + (hi - lo) * unit;
}

std::vector<float> RandomFloats(Rng& rng, int n, float lo, float hi) {
  std::vector<float> v(Index(n));
  for (float& x : v) x = rng.Uniform(lo, hi);
  return v;
}

std::vector<float> SmallIntFloats(Rng& rng, int n, int lo, int hi) {
  std::vector<float> v(Index(n));
  for (float& x : v) x = static_cast<float>(rng.Range(lo, hi));
  return v;
}

std::vector<int> RandomInts(Rng& rng, int n, int lo, int hi) {
  std::vector<int> v(Index(n));
  for (int& x : v) x = rng.Range(lo, hi);
  return v;
}

Csr RandomGraph(Rng& rng, int vertices, int max_degree) {
  Csr g;
  g.row_ptr.push_back(0);
  for (int u = 0; u < vertices; ++u) {
    int degree = rng.Range(0, max_degree);
    for (int e = 0; e < degree; ++e) g.col_idx.push_back(rng.Range(0, vertices - 1));
    g.row_ptr.push_back(static_cast<int>(g.col_idx.size()));
  }
  return g;
}

std::vector<float> VectorAdd(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) c[i] = a[i] + b[i];
  return c;
}

std::vector<float> Saxpy(float a, const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = std::fma(a, x[i], y[i]);
  return out;
}

std::vector<float> Matmul(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k) {
  std::vector<float> c(Index(m * n));
  for (int r = 0; r < m; ++r) {
    for (int col = 0; col < n; ++col) {
      float acc = 0.0f;
      for (int i = 0; i < k; ++i) acc += a[Index(r * k + i)] * b[Index(i * n + col)];
      c[Index(r * n + col)] = acc;
    }
  }
  return c;
}

std::vector<float> MatmulTransposed(const std::vector<float>& a, const std::vector<float>& b, int m, int n, int k) {
  std::vector<float> bt(Index(n * k));
  for (int i = 0; i < k; ++i)
    for (int col = 0; col < n; ++col) bt[Index(col * k + i)] = b[Index(i * n + col)];
  std::vector<float> c(Index(m * n));
  for (int r = 0; r < m; ++r)
    for (int col = 0; col < n; ++col)
      c[Index(r * n + col)] = std::inner_product(a.begin() + r * k, a.begin() + (r + 1) * k, bt.begin() + col * k,
                                                 0.0f);
  return c;
}

std::vector<unsigned> BlockSums(const std::vector<unsigned>& in, int block) {
  std::size_t per = 2 * Index(block);
  std::vector<unsigned> sums((in.size() + per - 1) / per, 0u);
  for (std::size_t i = 0; i < in.size(); ++i) sums[i / per] += in[i];
  return sums;
}

std::vector<int> InclusiveScan(const std::vector<int>& in) {
  std::vector<int> out(in.size());
  std::inclusive_scan(in.begin(), in.end(), out.begin());
  return out;
}

std::vector<int> InclusiveScanBlocked(const std::vector<int>& in, int block) {
  std::vector<int> out(in.size());
  std::vector<int> totals;
  for (std::size_t start = 0; start < in.size(); start += Index(block)) {
    int run = 0;
    for (std::size_t i = start; i < std::min(in.size(), start + Index(block)); ++i) out[i] = run += in[i];
    totals.push_back(run);
  }
  int offset = 0;
  for (std::size_t b = 0; b < totals.size(); ++b) {
    for (std::size_t i = b * Index(block); i < std::min(in.size(), (b + 1) * Index(block)); ++i) out[i] += offset;
    offset += totals[b];
  }
  return out;
}

std::vector<unsigned> Histogram(const std::vector<unsigned char>& data) {
  std::vector<unsigned> bins(kHistBins, 0u);
  for (unsigned char d : data) ++bins[d];
  return bins;
}

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int> BitonicSorted(std::vector<int> v) {
  int n = static_cast<int>(v.size());
  for (int size = 2; size <= n; size <<= 1) {
    for (int half = size / 2; half > 0; half >>= 1) {
      for (int t = 0; t < n / 2; ++t) {
        int lo = 2 * half * (t / half) + t % half;
        int hi = lo + half;
        bool up = (lo & size) == 0;
        if ((v[Index(lo)] > v[Index(hi)]) == up) std::swap(v[Index(lo)], v[Index(hi)]);
      }
    }
  }
  return v;
}

std::vector<int> BfsDistances(const Csr& g, int source) {
  std::vector<int> dist(Index(g.Vertices()), -1);
  std::deque<int> queue{source};
  dist[Index(source)] = 0;
  while (!queue.empty()) {
    int u = queue.front();
    queue.pop_front();
    for (int e = g.row_ptr[Index(u)]; e < g.row_ptr[Index(u + 1)]; ++e) {
      int v = g.col_idx[Index(e)];
      if (dist[Index(v)] < 0) {
        dist[Index(v)] = dist[Index(u)] + 1;
        queue.push_back(v);
      }
    }
  }
  return dist;
}

std::vector<int> BfsDistancesByLevels(const Csr& g, int source) {
  std::vector<int> dist(Index(g.Vertices()), -1);
  std::vector<int> frontier{source};
  dist[Index(source)] = 0;
  for (int level = 0; !frontier.empty(); ++level) {
    std::vector<int> next;
    for (int u : frontier) {
      for (int e = g.row_ptr[Index(u)]; e < g.row_ptr[Index(u + 1)]; ++e) {
        int v = g.col_idx[Index(e)];
        if (dist[Index(v)] == -1) {
          dist[Index(v)] = level + 1;
          next.push_back(v);
        }
      }
    }
    frontier = std::move(next);
  }
  return dist;
}

std::vector<WarpOut> WarpReduce(const std::vector<int>& in) {
  std::vector<WarpOut> out(in.size() / 32);
  for (std::size_t w = 0; w < out.size(); ++w) {
    WarpOut o{0, 0, in[w * 32], 0u, 1, 0};
    for (std::size_t lane = 0; lane < 32; ++lane) {
      int v = in[w * 32 + lane];
      o.sum_xor += v;
      if ((v & 1) != 0) o.ballot |= 1u << lane;
      if (v <= 0) o.all_positive = 0;
      if (v > 1000) o.any_over = 1;
    }
    o.sum_down = o.sum_xor;
    out[w] = o;
  }
  return out;
}

std::vector<float> Jacobi5(const std::vector<float>& in, int nx, int ny) {
  std::vector<float> out(in);
  for (int y = 1; y < ny - 1; ++y) {
    for (int x = 1; x < nx - 1; ++x) {
      std::size_t i = Index(y * nx + x);
      out[i] = 0.25f * (((in[i - 1] + in[i + 1]) + in[i - Index(nx)]) + in[i + Index(nx)]);
    }
  }
  return out;
}

double Horner(const std::vector<double>& coef, double x) {
  double acc = 0.0;
  for (std::size_t i = coef.size(); i-- > 0;) acc = std::fma(acc, x, coef[i]);
  return acc;
}

double FibD(int n) { return n < 2 ? static_cast<double>(n) : FibD(n - 1) + FibD(n - 2); }

double FibIter(int n) {
  double a = 0.0, b = 1.0;
  for (int i = 0; i < n; ++i) a = std::exchange(b, a + b);
  return a;
}

}  // namespace corpus::ref
