// SPDX-License-Identifier: GPL-2.0-or-later
// The runner's checks of the kernels about memory, control and launch
// mechanics: bfs (atomics), warp (shuffles, votes), list_walk (device
// pointers in device memory), devfunc (calls, f64), params (every parameter
// layout, both launch forms) and globals (cuModuleGetGlobal).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "cuda/corpus/corpus_layout.h"
#include "cuda/corpus/reference.h"
#include "cuda/corpus/runner_support.h"

namespace corpus {

void RunBfs(const Context& ctx) {
  Module m = ctx.Load("bfs");
  ref::Rng rng(201);
  ref::Csr g = ref::RandomGraph(rng, 2000, 5);
  int vertices = g.Vertices(), source = 0;
  std::vector<int> dist(static_cast<std::size_t>(vertices), -1);
  dist[0] = 0;
  Buffer drow(g.row_ptr), dcol(g.col_idx), ddist(dist);
  Buffer dfront_a(std::vector<int>(dist.size(), 0)), dfront_b(dist.size() * sizeof(int)), dsize(sizeof(int));
  dfront_a.Upload(std::vector<int>{source});
  CUfunction step = m.Function("bfs_step");
  Buffer* in = &dfront_a;
  Buffer* out = &dfront_b;
  int size = 1;
  for (int level = 0; size > 0; ++level) {
    if (level > vertices) throw Failure("bfs: more levels than vertices");
    dsize.Upload(std::vector<int>{0});
    Launch(step, {Blocks(size, 128)}, {128},
           {drow.Arg(), dcol.Arg(), in->Arg(), &size, out->Arg(), dsize.Arg(), ddist.Arg(), &level});
    size = dsize.Download<int>(1)[0];
    if (size < 0 || size > vertices) throw Failure("bfs: next frontier size " + std::to_string(size));
    std::swap(in, out);
  }
  ExpectEqual(ddist.Download<int>(dist.size()), ref::BfsDistances(g, source), "dist");
}

void RunWarp(const Context& ctx) {
  Module m = ctx.Load("warp");
  ref::Rng rng(202);
  int n = 4 * 128;
  auto in = ref::RandomInts(rng, n, 1, 600);
  in[37] = 1500;  // warp 1: one lane over 1000
  in[70] = 0;     // warp 2: not all positive
  Buffer din(in), dout(static_cast<std::size_t>(n / 32) * sizeof(WarpOut));
  Launch(m.Function("warp_reduce"), {4}, {128}, {din.Arg(), dout.Arg()});
  auto got = dout.Download<WarpOut>(static_cast<std::size_t>(n / 32));
  auto want = ref::WarpReduce(in);
  for (std::size_t w = 0; w < want.size(); ++w) {
    const WarpOut &g = got[w], &e = want[w];
    std::string at = "warp " + std::to_string(w) + " ";
    ExpectValue(g.sum_xor, e.sum_xor, (at + "sum_xor (shfl.bfly)").c_str());
    ExpectValue(g.sum_down, e.sum_down, (at + "sum_down (shfl.down)").c_str());
    ExpectValue(g.lane0, e.lane0, (at + "lane0 (shfl.idx)").c_str());
    ExpectValue(g.ballot, e.ballot, (at + "ballot").c_str());
    ExpectValue(g.all_positive, e.all_positive, (at + "all").c_str());
    ExpectValue(g.any_over, e.any_over, (at + "any").c_str());
  }
}

void RunListWalk(const Context& ctx) {
  Module m = ctx.Load("list_walk");
  ref::Rng rng(203);
  int lists = 64, nodes = 4096;
  Buffer dnodes(static_cast<std::size_t>(nodes) * sizeof(Node));
  // Nodes in shuffled order, dealt round-robin to the lists; next holds the
  // device address of the following node in the same list.
  std::vector<int> order(static_cast<std::size_t>(nodes));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<std::size_t>(rng.Range(0, static_cast<int>(i)))]);
  auto address = [&](int slot) {
    return reinterpret_cast<Node*>(
        static_cast<std::uintptr_t>(dnodes.Ptr() + static_cast<CUdeviceptr>(slot) * sizeof(Node)));
  };
  std::vector<Node> host(static_cast<std::size_t>(nodes), Node{nullptr, 0});
  std::vector<Node*> heads(static_cast<std::size_t>(lists), nullptr);
  std::vector<long long> sums(heads.size(), 0);
  std::vector<int> lengths(heads.size(), 0);
  for (int i = nodes - 1; i >= 0; --i) {  // build back to front: each node links to the list's current head
    auto list = static_cast<std::size_t>(i % lists);
    auto& node = host[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
    node.value = static_cast<long long>(rng.Next() >> 20);
    node.next = heads[list];
    heads[list] = address(order[static_cast<std::size_t>(i)]);
    sums[list] += node.value;
    ++lengths[list];
  }
  heads.back() = nullptr;  // one empty list
  sums.back() = 0;
  lengths.back() = 0;
  dnodes.Upload(host);
  Buffer dheads(heads), dsums(sums.size() * sizeof(long long)), dlengths(lengths.size() * sizeof(int));
  Launch(m.Function("list_walk"), {2}, {32}, {dheads.Arg(), &lists, dsums.Arg(), dlengths.Arg()});
  ExpectEqual(dlengths.Download<int>(lengths.size()), lengths, "lengths");
  ExpectEqual(dsums.Download<long long>(sums.size()), sums, "sums");
}

void RunDevfunc(const Context& ctx) {
  Module m = ctx.Load("devfunc");
  ref::Rng rng(204);
  int n = 200;
  std::vector<double> coef(9);
  for (double& c : coef) c = rng.UniformD(-2.0, 2.0);
  int ncoef = static_cast<int>(coef.size());
  std::vector<double> xs(static_cast<std::size_t>(n));
  for (double& x : xs) x = rng.UniformD(-1.5, 1.5);
  Buffer dcoef(coef), dxs(xs), dys(xs.size() * sizeof(double)), dfibs(xs.size() * sizeof(double));
  Launch(m.Function("poly_eval"), {Blocks(n, 64)}, {64}, {dcoef.Arg(), &ncoef, dxs.Arg(), dys.Arg(), dfibs.Arg(), &n});
  std::vector<double> ys(xs.size()), fibs(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ys[i] = ref::Horner(coef, xs[i]) + std::sqrt(std::fabs(xs[i]));
    fibs[i] = ref::FibD(static_cast<int>(i % 16));
  }
  ExpectEqual(dys.Download<double>(ys.size()), ys, "ys (fma.rn.f64, sqrt.rn.f64)");
  ExpectEqual(dfibs.Download<double>(fibs.size()), fibs, "fibs (recursive call)");
}

}  // namespace corpus
