// SPDX-License-Identifier: GPL-2.0-or-later
// The kernel corpus (cuda/corpus) on the cuda worker against the PTX
// interpreter: the same PTX on the same memory image at the same guest
// addresses, the whole image compared byte for byte, once with each launch
// whole and once sliced into one launch per block (the %ctaid rewrite).
#include <algorithm>
#include <filesystem>
#include <functional>
#include <numeric>
#include "cuda/corpus/corpus_layout.h"
#include "gpu/ptx/interpreter.h"
#include "ptx/module.h"
#include "ptx/params.h"
#include "worker/ctaid_rewrite.h"
#include "worker/module_globals.h"
#include "worker/gpu_check/check.h"

namespace vgpu::worker::check {
namespace {

struct Launch {
  std::string entry;
  uint32_t grid[3], block[3];
  std::vector<std::byte> params;
};

class Params {
 public:
  Params(const ptx::Module& m, const std::string& entry)
      : buf_(m.entries()[static_cast<size_t>(m.find_entry(entry))]) {}
  template <typename T>
  Params& operator()(const T& v) {
    buf_.set(i_++, v);
    return *this;
  }
  std::vector<std::byte> take() {
    if (!buf_.ok()) param_errors++;
    return std::move(buf_).take();
  }
  static inline int param_errors = 0;  // set() of a wrong size or index

 private:
  ptx::ParamBuffer buf_;
  size_t i_ = 0;
};

uint64_t mix(uint64_t& s) {  // splitmix64
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
uint64_t random_array(Image& img, uint64_t n, uint64_t& seed, std::function<T(uint64_t)> f) {
  uint64_t va = img.alloc(n * sizeof(T));
  for (uint64_t i = 0; i < n; i++) img.at<T>(va)[i] = f(mix(seed));
  return va;
}

float unit(uint64_t r) { return static_cast<float>(static_cast<int64_t>(r >> 40) - (1 << 23)) / float(1 << 23); }

uint32_t up(uint64_t n, uint32_t b) { return static_cast<uint32_t>((n + b - 1) / b); }

using Setup = std::function<std::vector<Launch>(const ptx::Module&, Image&)>;
struct Case {
  const char* kernel;
  Setup setup;
};

std::vector<Launch> vector_add(const ptx::Module& m, Image& img) {
  uint64_t s = 1, n = 100'000;
  auto a = random_array<float>(img, n, s, unit), b = random_array<float>(img, n, s, unit), c = img.alloc(n * 4);
  return {{"vectorAdd", {up(n, 256), 1, 1}, {256, 1, 1}, Params(m, "vectorAdd")(a)(b)(c)(int(n)).take()}};
}

std::vector<Launch> saxpy(const ptx::Module& m, Image& img) {
  uint64_t s = 2, n = 400'000;
  auto x = random_array<float>(img, n, s, unit), y = random_array<float>(img, n, s, unit);
  return {{"saxpy", {120, 1, 1}, {256, 1, 1}, Params(m, "saxpy")(int(n))(1.37f)(x)(y).take()}};
}

std::vector<Launch> matmul(const ptx::Module& m, Image& img) {
  uint64_t s = 3;
  int n = 200;
  auto a = random_array<float>(img, n * n, s, unit), b = random_array<float>(img, n * n, s, unit);
  auto c = img.alloc(uint64_t(n) * n * 4);
  uint32_t g = up(n, corpus::kMatmulTile), t = corpus::kMatmulTile;
  return {{"matmul", {g, g, 1}, {t, t, 1}, Params(m, "matmul")(a)(b)(c)(n)(n)(n).take()}};
}

std::vector<Launch> reduce(const ptx::Module& m, Image& img) {
  uint64_t s = 4, n = 1 << 20;
  auto in = random_array<uint32_t>(img, n, s, [](uint64_t r) { return uint32_t(r); });
  uint32_t blocks = up(n, 2 * corpus::kReduceBlock);
  auto partial = img.alloc(blocks * 4);
  return {{"reduce", {blocks, 1, 1}, {corpus::kReduceBlock, 1, 1}, Params(m, "reduce")(in)(partial)(int(n)).take()}};
}

std::vector<Launch> histogram(const ptx::Module& m, Image& img) {
  uint64_t s = 5, n = 1 << 21;
  auto data = random_array<uint8_t>(img, n, s, [](uint64_t r) { return uint8_t(r % 37 * 7); });
  auto bins = img.alloc(corpus::kHistBins * 4);
  return {{"histogram", {64, 1, 1}, {256, 1, 1}, Params(m, "histogram")(data)(int(n))(bins).take()}};
}

std::vector<Launch> warp(const ptx::Module& m, Image& img) {
  uint64_t s = 6, n = 32 * 1024;
  auto in = random_array<int32_t>(img, n, s, [](uint64_t r) { return int32_t(r % 2500) - 500; });
  auto out = img.alloc(n / 32 * sizeof(corpus::WarpOut));
  return {{"warp_reduce", {up(n, 256), 1, 1}, {256, 1, 1}, Params(m, "warp_reduce")(in)(out).take()}};
}

std::vector<Launch> list_walk(const ptx::Module& m, Image& img) {
  uint64_t s = 7;
  const int lists = 64, per = 200;
  auto nodes = img.alloc(uint64_t(lists) * per * sizeof(corpus::Node));
  std::vector<uint32_t> order(lists * per);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size() - 1; i > 0; i--) std::swap(order[i], order[mix(s) % (i + 1)]);
  auto heads = img.alloc(lists * 8);
  for (int l = 0; l < lists; l++) {
    for (int k = 0; k < per; k++) {
      uint64_t me = nodes + order[size_t(l * per + k)] * sizeof(corpus::Node);
      uint64_t next = k + 1 < per ? nodes + order[size_t(l * per + k + 1)] * sizeof(corpus::Node) : 0;
      memcpy(img.at<std::byte>(me), &next, 8);
      int64_t v = int64_t(mix(s) % 100000);
      memcpy(img.at<std::byte>(me + 8), &v, 8);
    }
    img.at<uint64_t>(heads)[l] = nodes + order[size_t(l * per)] * sizeof(corpus::Node);
  }
  auto sums = img.alloc(lists * 8), lengths = img.alloc(lists * 4);
  return {{"list_walk", {2, 1, 1}, {32, 1, 1}, Params(m, "list_walk")(heads)(lists)(sums)(lengths).take()}};
}

std::vector<Launch> stencil(const ptx::Module& m, Image& img) {
  uint64_t s = 8;
  int n = 300;
  auto a = random_array<float>(img, uint64_t(n) * n, s, unit), b = img.alloc(uint64_t(n) * n * 4);
  std::vector<Launch> out;
  uint32_t g = up(n, corpus::kStencilBlock), t = corpus::kStencilBlock;
  for (int i = 0; i < 10; i++)
    out.push_back({"jacobi5", {g, g, 1}, {t, t, 1}, Params(m, "jacobi5")(i % 2 ? b : a)(i % 2 ? a : b)(n)(n).take()});
  return out;
}

std::vector<Launch> devfunc(const ptx::Module& m, Image& img) {
  uint64_t s = 9, n = 5000;
  auto coef = random_array<double>(img, 8, s, [](uint64_t r) { return double(unit(r)); });
  auto xs = random_array<double>(img, n, s, [](uint64_t r) { return 4.0 * double(unit(r)); });
  auto ys = img.alloc(n * 8), fibs = img.alloc(n * 8);
  return {{"poly_eval", {up(n, 128), 1, 1}, {128, 1, 1}, Params(m, "poly_eval")(coef)(8)(xs)(ys)(fibs)(int(n)).take()}};
}

std::vector<Launch> bitonic(const ptx::Module& m, Image& img) {
  uint64_t s = 10;
  int n = corpus::kBitonicMax;
  auto d = random_array<int32_t>(img, uint64_t(n), s, [](uint64_t r) { return int32_t(r); });
  return {{"bitonic_sort", {1, 1, 1}, {uint32_t(n / 2), 1, 1}, Params(m, "bitonic_sort")(d)(n).take()}};
}

std::vector<Launch> scan(const ptx::Module& m, Image& img) {
  uint64_t s = 11;
  const uint32_t blocks = 200, b = corpus::kScanBlock;
  int n = int(blocks * b);
  auto in = random_array<int32_t>(img, uint64_t(n), s, [](uint64_t r) { return int32_t(r % 1000) - 300; });
  auto out = img.alloc(uint64_t(n) * 4), sums = img.alloc(blocks * 4), scanned = img.alloc(blocks * 4);
  return {{"scan_block", {blocks, 1, 1}, {b, 1, 1}, Params(m, "scan_block")(in)(out)(sums)(n).take()},
          {"scan_block", {1, 1, 1}, {b, 1, 1}, Params(m, "scan_block")(sums)(scanned)(uint64_t{0})(int(blocks)).take()},
          {"add_block_offsets", {blocks, 1, 1}, {b, 1, 1}, Params(m, "add_block_offsets")(out)(scanned)(n).take()}};
}

// The host's writes through cuModuleGetGlobal become bytes of the data
// segment, which the guest placed in its own memory.
std::vector<Launch> globals(const ptx::Module& m, Image& img) {
  uint64_t s = 12;
  img.data_va = img.alloc(m.data_bytes());
  auto init = m.initial_data();
  memcpy(img.at<std::byte>(img.data_va), init.data(), init.size());
  const ptx::Variable* table = m.find_variable("g_table");
  const ptx::Variable* scale = m.find_variable("c_scale");
  if (!table || !scale) return {};
  for (int i = 0; i < corpus::kGlobalTable; i++) img.at<float>(img.data_va + table->offset)[i] = unit(mix(s));
  for (int i = 0; i < 4; i++) img.at<float>(img.data_va + scale->offset)[i] = unit(mix(s));
  auto out = img.alloc(corpus::kGlobalTable * 4);
  return {{"globals_rw", {2, 1, 1}, {32, 1, 1}, Params(m, "globals_rw")(out).take()}};
}

std::vector<Launch> params(const ptx::Module& m, Image& img) {
  auto target = img.alloc(4), out = img.alloc(corpus::kSlotCount * 8);
  *img.at<int32_t>(target) = -123456;
  corpus::Mixed mixed{};
  mixed = {-7, 2.5, -300, 123456, 1.25f, -9'000'000'000ll, 200};
  return {{"params_all",
           {1, 1, 1},
           {32, 1, 1},
           Params(m, "params_all")(int8_t(-5))(uint8_t(250))(int16_t(-1234))(uint16_t(60000))(int32_t(-100000))(
               uint32_t(4'000'000'000u))(int64_t(-5'000'000'000ll))(uint64_t(18'000'000'000'000'000'000ull))(-0.375f)(
               3.0e-300)(target)(mixed)(out)
               .take()}};
}

const Case CASES[] = {{"globals", globals},
                      {"params", params},
                      {"vector_add", vector_add},
                      {"saxpy", saxpy},
                      {"matmul", matmul},
                      {"reduce", reduce},
                      {"histogram", histogram},
                      {"warp", warp},
                      {"list_walk", list_walk},
                      {"stencil", stencil},
                      {"devfunc", devfunc},
                      {"bitonic", bitonic},
                      {"scan", scan}};

// The launches on the interpreter; with `sliced` (the rewritten module),
// one launch per block with the rewrite's six words appended.
std::string on_interpreter(const ptx::Module& m, const std::vector<Launch>& launches, Image& img, bool sliced) {
  for (const Launch& l : launches) {
    for (const GridPiece& p : grid_pieces(l.grid, sliced ? 1 : 0)) {
      ptx::LaunchConfig c;
      c.entry = static_cast<uint32_t>(m.find_entry(l.entry));
      c.grid = {p.grid[0], p.grid[1], p.grid[2]};
      c.block = {l.block[0], l.block[1], l.block[2]};
      std::vector<std::byte> params = l.params;
      if (sliced) {
        auto at = slice_params_offset(static_cast<uint32_t>(params.size()));
        uint32_t words[SLICE_PARAM_WORDS] = {p.offset[0], p.offset[1], p.offset[2], l.grid[0], l.grid[1], l.grid[2]};
        params.resize(at + sizeof words);
        memcpy(params.data() + at, words, sizeof words);
      }
      c.params = params;
      c.data_va = img.data_va;
      auto r = ptx::run_blocks(m, c, img, 0, uint64_t{p.grid[0]} * p.grid[1] * p.grid[2]);
      if (!r) return "interpreter: " + r.error().message;
    }
  }
  return "";
}

std::string on_gpu(WorkerHost& h, const ptx::Module& m, const std::string& text, const std::vector<Launch>& launches,
                   Image& img, uint32_t piece_blocks) {
  if (auto e = load(h, 1, text, img.data_va); !e.empty()) return e;
  if (auto e = put_image(h, img); !e.empty()) return e;
  for (const Launch& l : launches) {
    auto entry = static_cast<uint32_t>(m.find_entry(l.entry));
    if (auto e = run(h, launch_command(h, 5, 1, entry, l.grid, l.block, l.params, piece_blocks)); !e.empty()) return e;
  }
  return get_image(h, img);
}

}  // namespace

int corpus_check(const std::string& binary, const std::string& ptx_dir, Checker& c) {
  std::unique_ptr<WorkerHost> h;
  if (binary != "none") {
    h = spawn_cuda(binary);
    if (!h) return 1;
    printf("device: %s\n", h->info().device.c_str());
  }
  int ran = 0;
  for (const char* suffix : {"clang", "nvcc"}) {
    for (const Case& k : CASES) {
      std::string path = ptx_dir + "/" + k.kernel + "." + suffix + ".ptx";
      if (!std::filesystem::exists(path)) continue;
      std::string text = read_file(path);
      ran++;
      auto m = ptx::parse_module(text);
      std::string name = std::string(k.kernel) + " (" + suffix + ")";
      if (!m) {
        c.expect(false, name + ": parse: " + m.error().message);
        continue;
      }
      Image ref;
      int before = Params::param_errors;
      auto launches = k.setup(**m, ref);
      if (Params::param_errors != before) {
        c.expect(false, name + ": a parameter of the wrong size");
        continue;
      }
      Image whole = ref, sliced = ref;
      std::string e = on_interpreter(**m, launches, ref, false);
      if (!h) {           // where no GPU is: the rewrite, one launch per block, on the interpreter
        std::string why;  // as the worker loads it: variables placed, then the rewrite
        auto placed = place_globals(text, **m, ref.data_va, why);
        RewrittenModule rw = rewrite_ctaid(placed ? *placed : text);
        auto rm = ptx::parse_module(rw.text);
        Image pieces = whole;
        std::string pe = rm ? on_interpreter(**rm, launches, pieces, rw.sliceable) : rm.error().message;
        c.expect(e.empty() && pe.empty() && placed && rw.sliceable && std::ranges::equal(pieces.bytes(), ref.bytes()),
                 name + ": the %ctaid rewrite run one block per launch on the interpreter equals the whole " + e + pe);
        continue;
      }
      if (e.empty()) e = on_gpu(*h, **m, text, launches, whole, 0);
      c.expect(e.empty() && std::ranges::equal(whole.bytes(), ref.bytes()),
               name + ": whole launches equal the interpreter's bytes " + e);
      e = on_gpu(*h, **m, text, launches, sliced, 1);
      c.expect(e.empty() && std::ranges::equal(sliced.bytes(), ref.bytes()),
               name + ": one launch per block equals them " + e);
    }
  }
  c.expect(ran > 0, "corpus PTX found in " + ptx_dir + " (" + std::to_string(ran) + " kernels)");
  return 0;
}

}  // namespace vgpu::worker::check
