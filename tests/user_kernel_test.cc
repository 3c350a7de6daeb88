// SPDX-License-Identifier: GPL-2.0-or-later
// User kernels (PTX modules, docs/spec/vgpu.md §10.6) through the whole
// stack: the guest driver's module calls, the mediator in every mode, the
// model's interpreter. The PTX is clang-14's output for kernels written
// here (tests/testing/user_kernels.cu, the build line beside it;
// tests/testing/user_kernels_ptx.h).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "driver/runtime.h"
#include "ptx/module.h"
#include "ptx/params.h"
#include "testbed/testbed.h"
#include "testbed/testing/testbeds.h"
#include "tests/testing/user_kernels_ptx.h"
#include "pv-driver/pv_page_tables.h"

namespace vgpu {
namespace {

using testbed::Mode;

const std::string& KERNELS_PTX = testing::USER_KERNELS_PTX;

constexpr uint32_t N = 3000;  // not a multiple of the block
constexpr uint32_t BLOCK = 256;

// A parameter buffer packed at the entry's offsets (ptx/params.h); every
// set() must name a parameter of its size (checked where it is used).
ptx::ParamBuffer Params(const ptx::Module& m, const char* entry) {
  return ptx::ParamBuffer(m.entries().at(static_cast<size_t>(m.find_entry(entry))));
}

class UserKernels : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    auto parsed = ptx::parse_module(KERNELS_PTX);
    ASSERT_TRUE(parsed) << parsed.error().message;
    module_ = *parsed;
  }
  std::unique_ptr<testbed::Testbed> make(uint32_t vms, uint32_t max_gpu_ms = 0, std::vector<uint32_t> slice = {}) {
    testbed::TestbedConfig tc;
    tc.mode = GetParam();
    tc.vms = GetParam() == Mode::native ? 1 : vms;
    tc.vram_per_vm = 64 * MiB;
    tc.device.paravirtual = GetParam() == Mode::pv ? pvdriver::open_pv_tables : nullptr;
    if (max_gpu_ms) tc.max_gpu_ms = max_gpu_ms;
    tc.slice_blocks = std::move(slice);
    tc.log = [](LogKind, const std::string&) {};
    return testing::create_testbed(tc);
  }
  uint32_t entry(const char* name) const { return static_cast<uint32_t>(module_->find_entry(name)); }

  // Runs `body` in every VM of `tb`, each VM's result a test expectation.
  static void expect_each_ok(const std::unique_ptr<testbed::Testbed>& tb,
                             const std::function<Status(testbed::Vm&)>& body) {
    ASSERT_TRUE(tb);
    for (auto& s : tb->run(body)) EXPECT_TRUE(s) << s.error().what();
  }

  // A new context of the VM's with the kernels loaded in it.
  struct Loaded {
    std::unique_ptr<driver::Context> ctx;
    driver::LoadedModule module;
  };
  Result<Loaded> load_kernels(testbed::Vm& vm) {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    auto m = (*ctx)->load_module(KERNELS_PTX, module_->data_bytes());
    if (!m) return std::unexpected(m.error());
    return Loaded{std::move(*ctx), *m};
  }

  // vadd over N elements with x[i] = i + salt, y[i] = 2i: checks c. The
  // launch is one LAUNCH_USER run, or LAUNCH of a descriptor.
  Status vector_add(driver::Context& ctx, const driver::LoadedModule& m, float salt, bool by_descriptor = false) {
    std::vector<float> a(N), b(N), c(N);
    for (uint32_t i = 0; i < N; ++i) {
      a[i] = static_cast<float>(i) + salt;
      b[i] = 2.0f * static_cast<float>(i);
    }
    auto ba = ctx.alloc(N * 4), bb = ctx.alloc(N * 4), bc = ctx.alloc(N * 4);
    if (!ba || !bb || !bc) return fail(Errc::out_of_memory, "buffers");
    if (auto r = ctx.upload(*ba, std::span<const float>(a)); !r) return r;
    if (auto r = ctx.upload(*bb, std::span<const float>(b)); !r) return r;
    auto p = Params(*module_, "vadd");
    p.set(0, *ctx.gpu_va(*ba)).set(1, *ctx.gpu_va(*bb)).set(2, *ctx.gpu_va(*bc)).set(3, N);
    EXPECT_TRUE(p.ok()) << "parameters";
    const driver::LaunchShape shape{{(N + BLOCK - 1) / BLOCK, 1, 1}, {BLOCK, 1, 1}};
    auto f = ctx.launch_module(
        {.slot = m.slot, .entry = entry("vadd"), .shape = shape, .params = p.bytes(), .by_descriptor = by_descriptor});
    if (!f) return std::unexpected(f.error());
    if (auto r = ctx.download(*bc, std::span<float>(c)); !r) return r;
    for (uint32_t i = 0; i < N; ++i)
      if (c[i] != a[i] + b[i]) return fail(Errc::device_error, "vadd: element " + std::to_string(i) + " wrong");
    for (auto buf : {*ba, *bb, *bc}) (void)ctx.free(buf);
    return {};
  }

  std::shared_ptr<const ptx::Module> module_;
};

TEST_P(UserKernels, VectorAddRunsThroughTheDriver) {
  expect_each_ok(make(1), [&](testbed::Vm& vm) -> Status {
    auto k = load_kernels(vm);
    if (!k) return std::unexpected(k.error());
    if (auto r = vector_add(*k->ctx, k->module, 0.5f); !r) return r;
    return k->ctx->unload_module(k->module);
  });
}

// The two forms of a user launch (§10.6), in turn on one channel: LAUNCH
// of a descriptor with the parameters in constant-buffer slot 0, and one
// LAUNCH_USER run, which leaves the object's launch state alone.
TEST_P(UserKernels, LaunchUserAndLaunchOfADescriptorGiveTheSameResult) {
  expect_each_ok(make(1), [&](testbed::Vm& vm) -> Status {
    auto k = load_kernels(vm);
    if (!k) return std::unexpected(k.error());
    if (auto r = vector_add(*k->ctx, k->module, 1.5f, true); !r) return r;
    if (auto r = vector_add(*k->ctx, k->module, 2.5f, false); !r) return r;
    return vector_add(*k->ctx, k->module, 3.5f, true);
  });
}

TEST_P(UserKernels, ModuleVariableIsInitialisedAndAtomicallyUpdated) {
  expect_each_ok(make(1), [&](testbed::Vm& vm) -> Status {
    auto k = load_kernels(vm);
    if (!k) return std::unexpected(k.error());
    auto p = Params(*module_, "bump");
    p.set(0, uint32_t{3});
    EXPECT_TRUE(p.ok()) << "parameters";
    auto f = k->ctx->launch_module(
        {.slot = k->module.slot, .entry = entry("bump"), .shape = {{4, 1, 1}, {64, 1, 1}}, .params = p.bytes()});
    if (!f) return std::unexpected(f.error());
    uint32_t counter = 0;
    const ptx::Variable* v = module_->find_variable("counter");
    if (v == nullptr) return fail(Errc::not_found, "counter");
    if (auto r = k->ctx->download(k->module.data, v->offset, std::as_writable_bytes(std::span(&counter, 1))); !r)
      return r;
    if (counter != 5 + 3 * 4 * 64) return fail(Errc::device_error, "counter is " + std::to_string(counter));
    return {};
  });
}

TEST_P(UserKernels, RefusedModuleIsReportedWithItsLineAndTheChannelGoesOn) {
  expect_each_ok(make(1), [&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    const std::string bad =
        ".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n  frobnicate.u32 %r1;\n}\n";
    auto m = (*ctx)->load_module(bad, 0);
    if (m) return fail(Errc::device_error, "a module with an unknown instruction loaded");
    auto report = (*ctx)->module_report();
    if (!report) return std::unexpected(report.error());
    if (report->status == cls::PtxStatus::ok || report->line != 6)
      return fail(Errc::device_error, "report: status " + std::to_string(static_cast<uint32_t>(report->status)) +
                                          " line " + std::to_string(report->line) + ": " + report->message);
    if (m.error().message.find("line 6") == std::string::npos)
      return fail(Errc::device_error, "message without the line: " + m.error().message);
    auto none = (*ctx)->load_module("no version here", 0);
    if (none || (*ctx)->module_report()->status != cls::PtxStatus::bad_version)
      return fail(Errc::device_error, "text without .version not refused as bad_version");
    auto good = (*ctx)->load_module(KERNELS_PTX, module_->data_bytes());
    if (!good) return std::unexpected(good.error());
    return vector_add(**ctx, *good, 1.0f);
  });
}

TEST_P(UserKernels, WildStoreFaultsItsOwnChannelOnly) {
  expect_each_ok(make(1), [&](testbed::Vm& vm) -> Status {
    auto bystander = load_kernels(vm);
    auto k = load_kernels(vm);
    if (!k || !bystander) return fail(Errc::device_error, "contexts with the kernels");
    constexpr uint64_t WILD = 0x40'0000'0040;  // nothing is mapped there
    auto p = Params(*module_, "store_at");
    p.set(0, WILD).set(1, uint32_t{7});
    EXPECT_TRUE(p.ok()) << "parameters";
    auto f = k->ctx->launch_module(
        {.slot = k->module.slot, .entry = entry("store_at"), .shape = {{1, 1, 1}, {1, 1, 1}}, .params = p.bytes()});
    if (!f) return std::unexpected(f.error());
    auto w = k->ctx->wait(*f);
    if (w || w.error().message.find("mmu_fault") == std::string::npos)
      return fail(Errc::device_error, "the wild store did not fault: " + (w ? std::string("ok") : w.error().message));
    auto report = k->ctx->module_report();
    if (!report || report->status != cls::PtxStatus::mmu_fault || report->addr != WILD)
      return fail(Errc::device_error, "report does not name the faulting address");
    return vector_add(*bystander->ctx, bystander->module, 2.0f);
  });
}

TEST_P(UserKernels, SlicedLaunchGivesTheWholeResult) {
  if (GetParam() == Mode::native) GTEST_SKIP() << "slicing is a host setting (fv modes)";
  expect_each_ok(make(1, 0, {3}), [&](testbed::Vm& vm) -> Status {
    auto k = load_kernels(vm);
    if (!k) return std::unexpected(k.error());
    return vector_add(*k->ctx, k->module, 3.0f);
  });
}

// cuMemAlloc's memory (spec §10.6, the compute aperture): 2 MiB-aligned VAs
// in [512 GiB, 1 TiB) over physically contiguous, 2 MiB-aligned VRAM; small
// buffers share a block in 4 KiB pages; a block goes back when empty.
TEST_P(UserKernels, ComputeBuffersLieInTheApertureIn2MiBBlocks) {
  expect_each_ok(make(1), [&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    driver::Context& c = **ctx;
    const uint64_t free_before = vm.device.vram_free();
    auto big = c.alloc_compute(5 * MiB), small1 = c.alloc_compute(100), small2 = c.alloc_compute(5000);
    if (!big || !small1 || !small2) return fail(Errc::out_of_memory, "compute buffers");
    const uint64_t vb = *c.gpu_va(*big), v1 = *c.gpu_va(*small1), v2 = *c.gpu_va(*small2);
    for (uint64_t v : {vb, v1, v2})
      if (v < driver::COMPUTE_APERTURE_BASE || v >= driver::COMPUTE_APERTURE_END)
        return fail(Errc::device_error, "a compute buffer outside the aperture");
    if (vb % driver::COMPUTE_BLOCK != 0) return fail(Errc::device_error, "a big buffer not 2 MiB-aligned");
    if (v1 / driver::COMPUTE_BLOCK != v2 / driver::COMPUTE_BLOCK || v2 - v1 != driver::COMPUTE_PAGE)
      return fail(Errc::device_error, "small buffers do not share a block in 4 KiB pages");
    auto& vmm = c.address_space().vmm();
    const auto pte0 = vmm.pte(vb, fmt::PageSize::big);
    const auto pte_last = vmm.pte(vb + 6 * MiB - fmt::BIG_PAGE, fmt::PageSize::big);
    if (!pte0 || !pte_last) return fail(Errc::not_found, "no big PTE behind the big buffer");
    if (fmt::pte::addr(*pte0) % driver::COMPUTE_BLOCK != 0 ||
        fmt::pte::addr(*pte_last) != fmt::pte::addr(*pte0) + 6 * MiB - fmt::BIG_PAGE)
      return fail(Errc::device_error, "the big buffer's VRAM is not contiguous and 2 MiB-aligned");
    if (vm.device.vram_free() != free_before - 8 * MiB) return fail(Errc::device_error, "not 3 + 1 blocks taken");
    for (auto b : {*big, *small1, *small2})
      if (auto r = c.free(b); !r) return r;
    if (vm.device.vram_free() != free_before) return fail(Errc::device_error, "blocks not given back");
    return {};
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, UserKernels, ::testing::Values(Mode::native, Mode::fv_naive, Mode::fv_opt, Mode::pv),
                         [](const auto& p) { return testbed::mode_identifier(p.param); });

// Two VMs load the same module, get the same addresses and run it at once
// on different data; a runaway in a third channel is stopped by the
// watchdog while they run, and its VM launches again in a new context.
TEST(UserKernelIsolation, SameModuleSameAddressesDifferentDataAndARunawayStopped) {
  auto parsed = ptx::parse_module(KERNELS_PTX);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const auto mod = *parsed;
  testbed::TestbedConfig tc;
  tc.mode = Mode::fv_opt;
  tc.vms = 2;
  tc.vram_per_vm = 64 * MiB;
  tc.max_gpu_ms = 300;
  tc.watchdog_ms = 1000;  // sliced by default, the runaway is ended by the watchdog, not by max-gpu-ms
  tc.log = [](LogKind, const std::string&) {};
  auto tb = testbed::Testbed::create(tc);
  ASSERT_TRUE(tb) << tb.error().what();
  std::vector<uint64_t> vas(2);
  auto st = (*tb)->run([&](testbed::Vm& vm) -> Status {
    auto ctx = vm.device.create_context();
    if (!ctx) return std::unexpected(ctx.error());
    auto m = (*ctx)->load_module(KERNELS_PTX, mod->data_bytes());
    if (!m) return std::unexpected(m.error());
    auto buf = (*ctx)->alloc(N * 4);
    if (!buf) return std::unexpected(buf.error());
    vas[vm.index] = *(*ctx)->gpu_va(*buf);
    const auto fill_value = static_cast<float>(vm.index + 1);
    std::vector<float> x(N, fill_value), out(N);
    if (auto r = (*ctx)->upload(*buf, std::span<const float>(x)); !r) return r;
    if (vm.index == 1) {  // a runaway first, in a context of its own
      auto spin_ctx = vm.device.create_context();
      if (!spin_ctx) return std::unexpected(spin_ctx.error());
      auto sm = (*spin_ctx)->load_module(KERNELS_PTX, mod->data_bytes());
      auto flag = (*spin_ctx)->alloc(4096);
      if (!sm || !flag) return fail(Errc::device_error, "runaway setup");
      uint32_t zero = 0;
      if (auto r = (*spin_ctx)->upload(*flag, 0, std::as_bytes(std::span(&zero, 1))); !r) return r;
      auto p = Params(*mod, "forever");
      p.set(0, *(*spin_ctx)->gpu_va(*flag));
      EXPECT_TRUE(p.ok()) << "parameters";
      auto f = (*spin_ctx)->launch_module({.slot = sm->slot,
                                           .entry = static_cast<uint32_t>(mod->find_entry("forever")),
                                           .shape = {{1, 1, 1}, {32, 1, 1}},
                                           .params = p.bytes()});
      if (!f) return std::unexpected(f.error());
      auto w = (*spin_ctx)->wait(*f);
      if (w || w.error().message.find("timeout") == std::string::npos)
        return fail(Errc::device_error, "the runaway was not stopped by its bound");
    }
    for (int round = 0; round < 20; ++round) {
      auto p = Params(*mod, "vadd");
      const uint64_t va = *(*ctx)->gpu_va(*buf);
      p.set(0, va).set(1, va).set(2, va).set(3, N);
      EXPECT_TRUE(p.ok()) << "parameters";
      auto f = (*ctx)->launch_module({.slot = m->slot,
                                      .entry = static_cast<uint32_t>(mod->find_entry("vadd")),
                                      .shape = {{(N + BLOCK - 1) / BLOCK, 1, 1}, {BLOCK, 1, 1}},
                                      .params = p.bytes()});
      if (!f) return std::unexpected(f.error());
    }
    if (auto r = (*ctx)->download(*buf, std::span<float>(out)); !r) return r;
    const float want = fill_value * 1048576.0f;  // doubled 20 times
    for (uint32_t i = 0; i < N; ++i)
      if (out[i] != want) return fail(Errc::device_error, "VM result wrong at " + std::to_string(i));
    return {};
  });
  for (auto& s : st) EXPECT_TRUE(s) << s.error().what();
  EXPECT_EQ(vas[0], vas[1]) << "both VMs' drivers allocate the same addresses";
}

}  // namespace
}  // namespace vgpu
