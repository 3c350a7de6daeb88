// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-program harness's host, victim, attacker and oracle
// (guest_fixture.h).
#include "mediator/fuzz/guest_fixture.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/text.h"
#include "driver/native_port.h"
#include "testbed/mediated_port.h"
#include "pv-driver/pv_page_tables.h"

namespace vgpu::fuzz {
namespace {

constexpr uint64_t SMALL_SENTINEL = 4 * KiB;
constexpr uint64_t BIG_SENTINEL = fmt::BIG_PAGE;
constexpr uint32_t WORK_FLOATS = 1024;
constexpr uint32_t SMALL_SALT = 0x5a5a0000u, BIG_SALT = 0xa5a50000u, RAM_SALT = 0x3c3c0000u;

uint32_t pattern(uint64_t i, uint32_t salt) { return static_cast<uint32_t>(i * 2654435761u) ^ salt; }

std::vector<uint32_t> words_of(uint64_t bytes, uint32_t salt) {
  std::vector<uint32_t> w(bytes / sizeof(uint32_t));
  for (size_t i = 0; i < w.size(); ++i) w[i] = pattern(i, salt);
  return w;
}

template <typename T>
T need(Result<T> r, const char* what) {
  if (!r) finding(std::string("fixture: ") + what + ": " + r.error().what());
  return std::move(*r);
}

uint64_t need(std::optional<uint64_t> v, const char* what) {
  if (!v) finding(std::string("fixture: ") + what + ": none");
  return *v;
}

void need(Status s, const char* what) {
  if (!s) finding(std::string("fixture: ") + what + ": " + s.error().what());
}

// Internal errors are the host's own failures: a finding. Guest errors
// are what bad guests get: counted by the vGPU, not printed.
void log_line(LogKind kind, const std::string& line) {
  if (kind == LogKind::internal_error) finding("host internal error: " + line);
}

mediator::VgpuConfig vgpu_config(const char* name, Mode mode) {
  mediator::VgpuConfig vc;
  vc.name = name;
  vc.vram_bytes = VM_VRAM;
  vc.channels = CHANNELS;
  vc.bar_remap = mode != Mode::fv_naive;
  vc.lazy_shadow = mode != Mode::fv_naive;
  vc.pv = mode == Mode::pv;
  vc.shadow_bytes = 8 * MiB;
  return vc;
}

driver::DeviceOptions device_options(Mode mode, uint64_t timeout_ns) {
  driver::DeviceOptions o;
  o.inst_heap_bytes = INST_HEAP;
  o.staging_bytes = 256 * KiB;
  o.timeout_ns = timeout_ns;
  // Ring space too: a guest's own queued work (a sliced spin may ask for
  // 10 s, cls::MAX_SPIN_NS) holds its channel's ring that long, and an
  // op waiting behind it would cost the input seconds, not this wait.
  o.channel.timeout_ns = timeout_ns;
  o.paravirtual = mode == Mode::pv ? pvdriver::open_pv_tables : nullptr;
  return o;
}

std::span<std::byte> span_of(gpu::MemfdRam& r) { return {r.data(), r.size()}; }

// The attacker's driver reaches its BARs only through accesses, never
// through a mapping it keeps: a direct mapping would outlive the layout
// the attacker's own raw accesses change (a PROT_NONE page here, where a
// real guest's access would trap). Accesses to direct pages still go
// straight to VRAM in the port below, as a guest's would.
class AccessOnlyPort final : public driver::Port {
 public:
  explicit AccessOnlyPort(std::unique_ptr<driver::Port> inner) : inner_(std::move(inner)) {}
  uint32_t read32(driver::Bar bar, uint64_t offset) override { return inner_->read32(bar, offset); }
  void write32(driver::Bar bar, uint64_t offset, uint32_t value) override { inner_->write32(bar, offset, value); }
  void fill32(driver::Bar bar, uint64_t offset, uint64_t bytes, uint32_t value) override {
    inner_->fill32(bar, offset, bytes, value);
  }
  std::span<std::byte> map(driver::Bar, uint64_t, uint64_t) override { return {}; }
  uint64_t bar_size(driver::Bar bar) const override { return inner_->bar_size(bar); }
  void relax() override { inner_->relax(); }
  // The driver's register waits last as long as its fence waits (the
  // campaign's VGPU_FUZZ_WAIT_MS once set up), not 2 s: a guest that
  // broke its device made a new context wait out five of them.
  uint64_t register_wait_ns() const override { return register_wait_ns_; }
  void set_register_wait(uint64_t ns) { register_wait_ns_ = ns; }
  bool has_interrupts() const override { return inner_->has_interrupts(); }
  IrqCounts interrupt_counts() override { return inner_->interrupt_counts(); }
  bool wait_interrupt(const IrqCounts& seen, uint64_t timeout_ns) override {
    return inner_->wait_interrupt(seen, timeout_ns);
  }
  std::string name() const override { return "fuzz-" + inner_->name(); }
  Result<driver::PinnedPages> pin(uint64_t bytes) override { return inner_->pin(bytes); }
  void unpin(std::span<std::byte> host) override { inner_->unpin(host); }

 private:
  std::unique_ptr<driver::Port> inner_;
  uint64_t register_wait_ns_ = driver::REGISTER_WAIT_NS;
};

// "word N changed in VRAM" for the first of `want` that differs at
// `addr`, or nothing.
std::string changed_word(const gpu::Vram& vram, uint64_t addr, const std::vector<uint32_t>& want) {
  std::vector<uint32_t> got(want.size());
  if (!vram.read(addr, got.data(), got.size() * sizeof(uint32_t))) return "out of VRAM";
  if (got == want) return {};
  const size_t i = static_cast<size_t>(std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin());
  return "word " + std::to_string(i) + " changed in VRAM";
}

}  // namespace

void trace_since(const char* what, std::chrono::steady_clock::time_point start) {
  static const bool trace = std::getenv("VGPU_FUZZ_TRACE") != nullptr;
  if (!trace) return;
  const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
  std::fprintf(stderr, "fixture: %s %.0f us\n", what, us.count());
}

uint32_t env_count(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end != '\0' || n == 0 || n > UINT32_MAX) {
    std::fprintf(stderr, "%s='%s': not a whole number from 1 to %u\n", name, v, UINT32_MAX);
    std::exit(2);
  }
  return static_cast<uint32_t>(n);
}

namespace {

// The inputs since the oldest kept attacker was made (VGPU_FUZZ_REUSE >
// 1), the last MAX_HISTORY of them: a finding may need them all, so they
// are written out with it.
constexpr size_t MAX_HISTORY = 1024;
std::vector<std::vector<uint8_t>>& history() {
  static std::vector<std::vector<uint8_t>> h;
  return h;
}

std::mutex& history_mutex() {
  static std::mutex m;
  return m;
}

// Writes the history to VGPU_FUZZ_HISTORY/history-NNNNN, oldest first, to
// be replayed in that order (NAME_fuzz_replay DIR/history-*). The line
// that says so starts with `tag` and names them by `why`.
void write_history(const char* tag, const char* why) {
  const char* dir = std::getenv("VGPU_FUZZ_HISTORY");
  if (!dir || history().size() < 2) return;
  for (size_t i = 0; i < history().size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/history-%05zu", i);
    if (FILE* out = std::fopen((std::string(dir) + name).c_str(), "wb")) {
      (void)std::fwrite(history()[i].data(), 1, history()[i].size(), out);
      std::fclose(out);
    }
  }
  std::fprintf(stderr, "%s: the %zu inputs %s are in %s/history-*\n", tag, history().size(), why, dir);
}

// libFuzzer's -timeout ends the process from its own alarm, past the
// harness: with VGPU_FUZZ_HISTORY set and kept attackers, a watchdog
// writes the history once an input has run for HISTORY_AFTER (below the
// campaigns' -timeout=10), so that a timeout's inputs before it are kept.
constexpr auto HISTORY_AFTER = std::chrono::seconds(8);
constexpr auto WATCHDOG_POLL = std::chrono::milliseconds(500);
std::atomic<int64_t> input_started_ns{0};  // steady clock; 0: no input running
std::atomic<uint64_t> input_seq{0};
// Where the input is (note_step), for the watchdog's line: a slow input's
// history says what ran before it, this what it was doing at 8 s.
std::atomic<const char*> step_what{"start"};
std::atomic<int64_t> step_index{-1}, step_started_ns{0};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start_history_watchdog() {
  std::thread([] {
    uint64_t written = 0;
    for (;;) {
      std::this_thread::sleep_for(WATCHDOG_POLL);
      const int64_t start = input_started_ns.load(std::memory_order_acquire);
      const uint64_t seq = input_seq.load(std::memory_order_acquire);
      if (start == 0 || seq == written ||
          steady_ns() - start < std::chrono::duration_cast<std::chrono::nanoseconds>(HISTORY_AFTER).count())
        continue;
      std::fprintf(stderr, "fuzz fixture: input running %.1f s, in %s %lld for %.1f s\n",
                   static_cast<double>(steady_ns() - start) / 1e9, step_what.load(),
                   static_cast<long long>(step_index.load()),
                   static_cast<double>(steady_ns() - step_started_ns.load()) / 1e9);
      std::lock_guard lock(history_mutex());
      write_history("fuzz fixture", "up to one that has run for 8 s (a libFuzzer -timeout may follow)");
      written = seq;
    }
  }).detach();
}

}  // namespace

void note_step(const char* what, int64_t index) {
  step_what.store(what, std::memory_order_relaxed);
  step_index.store(index, std::memory_order_relaxed);
  step_started_ns.store(steady_ns(), std::memory_order_relaxed);
}

void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  {
    std::unique_lock lock(history_mutex(), std::try_to_lock);  // the watchdog may be writing it
    write_history("FUZZ FINDING", "that led to it");
  }
  std::fflush(stderr);
  std::abort();
}

uint64_t Attacker::partition_base() const { return vgpu ? vgpu->partition().base : 0; }
uint64_t Attacker::vram_bytes() const { return vgpu ? vgpu->partition().size : VM_VRAM; }

Fixture& Fixture::get() {
  static Fixture* f = new Fixture();  // never destroyed: shut down at exit (shutdown)
  return *f;
}

// At exit (libFuzzer's exit after -max_total_time or -runs, the replay's
// return from main): the kept attackers, the victim and both GPUs go
// before static objects do, so that no GPU thread (PFIFO running a
// method an attacker left in flight) runs into a destroyed one. Registered
// once the host is made, so it runs before the destructors of the statics
// the host's making first used.
void Fixture::shutdown() {
  Fixture& f = get();
  for (auto& k : f.kept_) {
    if (!k) continue;
    f.teardown(*k);
    k.reset();
  }
  f.victim_fence_.reset();
  f.victim_ctx_.reset();
  f.victim_dev_.reset();
  f.victim_port_.reset();
  if (f.victim_vgpu_) f.host_->destroy_vgpu(f.victim_vgpu_);
  f.victim_vgpu_ = nullptr;
  f.host_.reset();
  f.native_.reset();
}

Fixture::Fixture() {
  reuse_ = env_count("VGPU_FUZZ_REUSE", 1);
  if (std::getenv("VGPU_FUZZ_WAIT_MS")) wait_ms_ = env_count("VGPU_FUZZ_WAIT_MS", 0);
  if (std::getenv("VGPU_FUZZ_OP_WAIT_MS")) op_wait_ns_ = uint64_t{env_count("VGPU_FUZZ_OP_WAIT_MS", 0)} * 1'000'000;
  fill_every_ = env_count("VGPU_FUZZ_FILL_EVERY", 1);
  every_[static_cast<size_t>(Costly::reset)] = env_count("VGPU_FUZZ_RESET_EVERY", 1);
  if (std::getenv("VGPU_FUZZ_CONTEXT_EVERY"))
    every_[static_cast<size_t>(Costly::context)] = env_count("VGPU_FUZZ_CONTEXT_EVERY", 1);
  if (reuse_ > 1) std::atexit(print_fresh_counts);
  if (reuse_ > 1 && std::getenv("VGPU_FUZZ_HISTORY")) start_history_watchdog();
  for (Mode m : {Mode::fv_naive, Mode::fv_opt, Mode::pv})
    attacker_ram_[static_cast<size_t>(m)] = need(gpu::MemfdRam::create(VM_RAM, "fuzz-attacker-ram"), "attacker RAM");
  victim_ram_ = need(gpu::MemfdRam::create(VM_RAM, "fuzz-victim-ram"), "victim RAM");
  native_ram_ = need(gpu::MemfdRam::create(VM_RAM, "fuzz-native-ram"), "pass-through RAM");
  mediator::HostConfig hc;
  hc.reserved_bytes = 64 * MiB;
  // The victim and one kept attacker per mediated mode.
  hc.vram_bytes = 4 * VM_VRAM + hc.reserved_bytes;
  hc.max_gpu_ms = MAX_GPU_MS;
  hc.turn_ns = TURN_NS;
  hc.log = log_line;
  hc.on_turn = [this](const mediator::TurnEvent& e) { turns_(e); };
  host_ = need(mediator::Host::create(hc), "host");
  native_ = need(gpu::Gpu::create(gpu::GpuConfig{.vram_bytes = VM_VRAM, .log = log_line, .sysmem = native_ram_}),
                 "pass-through GPU");
  make_victim();
  std::atexit(shutdown);
}

void Fixture::make_victim() {
  victim_vgpu_ = need(host_->create_vgpu(vgpu_config("victim", Mode::fv_opt)), "victim vGPU");
  need(host_->set_guest_ram(*victim_vgpu_, {{0, VM_RAM, victim_ram_, 0}}), "victim RAM");
  auto port = need(testbed::MediatedPort::create(*victim_vgpu_, host_->gpu().vram()), "victim port");
  port->set_pinned_ram(span_of(*victim_ram_), 0);
  victim_port_ = std::move(port);
  victim_dev_ = need(driver::Device::open(*victim_port_, device_options(Mode::fv_opt, VICTIM_BOUND_MS * 1'000'000)),
                     "victim open");
  victim_ctx_ = need(victim_dev_->create_context(), "victim context");
  small_ = need(victim_ctx_->alloc(SMALL_SENTINEL), "victim buffer");
  big_ = need(victim_ctx_->alloc(BIG_SENTINEL), "victim buffer");
  work_ = need(victim_ctx_->alloc(WORK_FLOATS * sizeof(float)), "victim buffer");
  small_words_ = words_of(SMALL_SENTINEL, SMALL_SALT);
  big_words_ = words_of(BIG_SENTINEL, BIG_SALT);
  need(victim_ctx_->upload(small_, std::span<const uint32_t>(small_words_)), "victim upload");
  need(victim_ctx_->upload(big_, std::span<const uint32_t>(big_words_)), "victim upload");
  driver::PageTables& vmm = victim_ctx_->address_space().vmm();
  victim_small_gaddr_ = fmt::pte::addr(
      need(vmm.pte(victim_ctx_->gpu_va(small_).value(), fmt::PageSize::small), "victim small PTE"));
  victim_big_gaddr_ = fmt::pte::addr(
      need(vmm.pte(victim_ctx_->gpu_va(big_).value(), fmt::PageSize::big), "victim big PTE"));
  auto* ram = reinterpret_cast<uint32_t*>(victim_ram_->data());
  for (size_t i = 0; i < victim_ram_->size() / sizeof(uint32_t); ++i) ram[i] = pattern(i, RAM_SALT);
  victim_ram_copy_.assign(victim_ram_->data(), victim_ram_->data() + victim_ram_->size());
  victim_errors_ = victim_vgpu_->counters().guest_errors;
}

Attacker& Fixture::attacker(Mode mode) {
  std::optional<Attacker>& kept = kept_[static_cast<size_t>(mode)];
  ++counts_.inputs;
  if (!kept) {
    ++counts_.fresh;
    kept.emplace(fresh(mode));
  }
  ++kept->inputs;
  return *kept;
}

void Fixture::after_input(Attacker& a) {
  if (a.inputs < reuse_ && !a.wedged && !a.was_reset && a.ctx) {
    a.last.reset();
    return;
  }
  // The first reason that holds: an input that wedged or reset its device,
  // or left it with no context, forced the next fresh attacker.
  ++(a.wedged ? counts_.wedged : a.was_reset ? counts_.reset : !a.ctx ? counts_.no_context : counts_.scheduled);
  const size_t slot = static_cast<size_t>(a.mode);
  const auto start = std::chrono::steady_clock::now();
  note_step("the fixture: the attacker's teardown", -1);
  teardown(a);
  trace_since("teardown", start);
  kept_[slot].reset();
}

bool Fixture::take(Costly what) {
  const auto k = static_cast<size_t>(what);
  const bool taken = reuse_ == 1 || every_[k] == 0 || last_[k] == 0 || counts_.inputs - last_[k] >= every_[k];
  if (taken) last_[k] = counts_.inputs;
  if (what == Costly::context) ++(taken ? counts_.contexts : counts_.contexts_skipped);
  return taken;
}

void Fixture::print_fresh_counts() {
  const FreshCounts& c = get().counts_;
  std::fprintf(stderr,
               "fuzz fixture: %llu inputs, %llu fresh attackers; torn down after VGPU_FUZZ_REUSE inputs %llu, "
               "forced: wedged %llu, reset %llu, no context %llu; new contexts %llu, skipped %llu\n",
               static_cast<unsigned long long>(c.inputs), static_cast<unsigned long long>(c.fresh),
               static_cast<unsigned long long>(c.scheduled), static_cast<unsigned long long>(c.wedged),
               static_cast<unsigned long long>(c.reset), static_cast<unsigned long long>(c.no_context),
               static_cast<unsigned long long>(c.contexts), static_cast<unsigned long long>(c.contexts_skipped));
}

Attacker Fixture::fresh(Mode mode) {
  note_step("the fixture: a fresh attacker", -1);
  const auto start = std::chrono::steady_clock::now();
  Attacker a;
  a.mode = mode;
  attach(a);
  // A fresh device always opens and makes a context: in pass-through
  // this is also the check that the last input's reset left a working GPU.
  // First with the campaign's short driver wait (VGPU_FUZZ_WAIT_MS), so
  // that an input that breaks its device pays that wait, not the setup's;
  // a setup that times out under it (a loaded machine) runs again with
  // the long one, on a device made afresh (not the half-opened one, whose
  // first channel may still hold the short setup's work).
  const uint64_t long_ns = mode == Mode::native ? NATIVE_DEVICE_WAIT_NS : ATTACKER_DEVICE_WAIT_NS;
  if (wait_ms_ != 0 && !open_driver(a, uint64_t{wait_ms_} * 1'000'000).empty()) {
    teardown(a);
    attach(a);
  }
  if (!a.ctx) {
    // A pass-through GPU may still run the last guest's engine work (a
    // reset does not recall it, and that guest may have raised
    // ENGINE_TIMEOUT): the next guest gets the device once it is idle.
    const bool drained = mode != Mode::native || native_->wait_idle(NATIVE_DRAIN_NS);
    if (std::string e = open_driver(a, long_ns); !e.empty())
      finding("fixture: attacker " + e + "; " + (mode == Mode::native ? native_state(drained) : host_state(&a)));
  }
  a.raw.emplace(*a.port);
  trace_since("fresh attacker", start);
  return a;
}

// The attacker's device: a new vGPU and its port, or a port on the
// pass-through GPU; RAM cleared.
void Fixture::attach(Attacker& a) {
  if (a.mode == Mode::native) {
    std::memset(native_ram_->data(), 0, native_ram_->size());
    auto port = need(driver::NativePort::create(*native_), "pass-through port");
    port->set_pinned_ram(span_of(*native_ram_), 0);
    a.port = std::make_unique<AccessOnlyPort>(std::move(port));
    return;
  }
  gpu::MemfdRam& ram = *attacker_ram_[static_cast<size_t>(a.mode)];
  std::memset(ram.data(), 0, ram.size());
  a.vgpu = need(host_->create_vgpu(vgpu_config(mode_name(a.mode), a.mode)), "attacker vGPU");
  need(host_->set_guest_ram(*a.vgpu, {{0, VM_RAM, attacker_ram_[static_cast<size_t>(a.mode)], 0}}), "attacker RAM");
  auto port = need(testbed::MediatedPort::create(*a.vgpu, host_->gpu().vram()), "attacker port");
  port->set_pinned_ram(span_of(ram), 0);
  a.port = std::make_unique<AccessOnlyPort>(std::move(port));
}

// The driver on the attacker's port: device, context, buffers; what
// failed, or nothing.
std::string Fixture::open_driver(Attacker& a, uint64_t wait_ns) {
  a.ctx.reset();
  a.dev.reset();
  static_cast<AccessOnlyPort&>(*a.port).set_register_wait(wait_ns);  // every attacker's port is one
  const auto start = std::chrono::steady_clock::now();
  auto dev = driver::Device::open(*a.port, device_options(a.mode, wait_ns));
  trace_since("driver open", start);
  if (!dev) return "open: " + std::string(dev.error().what());
  a.dev = std::move(*dev);
  // As the host bounds every GPFIFO entry's engine work (MAX_GPU_MS), so
  // that a guest's launches (a spin may ask for 10 s, cls::MAX_SPIN_NS)
  // do not outlive the reset that ends it by seconds. Once the driver has
  // PFIFO out of reset (a unit in reset takes no register writes); the
  // guest may change it.
  if (a.mode == Mode::native) native_->write32(regs::pfifo::ENGINE_TIMEOUT.offset, MAX_GPU_MS);
  auto ctx = a.dev->create_context();
  if (!ctx) return "context: " + std::string(ctx.error().what());
  a.ctx = std::move(*ctx);
  auto x = a.ctx->alloc(BUFFER_BYTES), y = a.ctx->alloc(BUFFER_BYTES), pinned = a.ctx->alloc_host(BUFFER_BYTES);
  if (!x || !y || !pinned) return "buffers: " + std::string((!x ? x : !y ? y : pinned).error().what());
  a.a = *x;
  a.b = *y;
  a.pinned = *pinned;
  return {};
}

void Fixture::teardown(Attacker& a) {
  a.raw.reset();
  a.ctx.reset();
  a.dev.reset();
  a.port.reset();
  if (a.vgpu) host_->destroy_vgpu(a.vgpu);
  a.vgpu = nullptr;
  if (a.mode == Mode::native) {
    // The next input's open must find a working GPU: reset it as a
    // hypervisor would between guests (PMC.ENABLE cleared).
    native_->write32(regs::pmc::ENABLE.offset, 0);
  }
}

void Fixture::victim_begin() {
  fill_running_ = inputs_++ % fill_every_ == 0;
  if (!fill_running_) return;
  const float value = static_cast<float>(++round_ % 1000 + 1);
  victim_fence_ = need(victim_ctx_->fill({work_, WORK_FLOATS, value}), "victim fill");
}

std::string Fixture::victim_memory_changed() {
  gpu::Vram& vram = host_->gpu().vram();
  const uint64_t base = victim_vgpu_->partition().base;
  // One bulk read each (a word at a time cost more than a small input).
  if (std::string m = changed_word(vram, base + victim_small_gaddr_, small_words_); !m.empty())
    return "victim small sentinel " + m;
  if (std::string m = changed_word(vram, base + victim_big_gaddr_, big_words_); !m.empty())
    return "victim big sentinel " + m;
  if (std::memcmp(victim_ram_->data(), victim_ram_copy_.data(), victim_ram_copy_.size()) != 0)
    return "victim RAM changed";
  return {};
}

void Fixture::victim_end() {
  if (fill_running_) victim_fill_done();
  if (std::string m = victim_memory_changed(); !m.empty()) finding(m);
  if (auto e = victim_ctx_->channel().error(); e != regs::ChannelError::none)
    finding("victim channel error " + std::to_string(static_cast<uint32_t>(e)));
  if (victim_vgpu_->counters().guest_errors != victim_errors_)
    finding("the victim got a guest error: " + victim_vgpu_->guest_errors().back());
}

void Fixture::victim_fill_done() {
  note_step("the fixture: the victim's fill", -1);
  const auto start = std::chrono::steady_clock::now();
  if (auto s = victim_ctx_->wait(*victim_fence_, VICTIM_BOUND_MS * 1'000'000); !s)
    finding("victim fill of round " + std::to_string(round_) + " did not finish: " + s.error().what() + "; " +
            host_state());
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  if (static_cast<uint64_t>(ms.count()) > VICTIM_BOUND_MS)
    finding("victim fill took " + std::to_string(ms.count()) + " ms after the attacker's input");
  std::vector<float> got(WORK_FLOATS);
  need(victim_ctx_->download(work_, std::span<float>(got)), "victim download");
  const float want = static_cast<float>(round_ % 1000 + 1);
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want) finding("victim fill result word " + std::to_string(i) + " wrong");
}

std::string Fixture::native_state(bool drained) {
  const std::string busy = drained ? "idle"
                                   : strfmt("still busy %llu ms after its reset",
                                            static_cast<unsigned long long>(NATIVE_DRAIN_NS / 1'000'000));
  return strfmt("pass-through GPU %s before the open, channel 0 state 0x%x", busy.c_str(), native_->channel_state(0));
}

std::string Fixture::host_state(const Attacker* making) {
  const mediator::TurnCounts t = host_->turn_counts();
  std::string out = strfmt("turns started %llu, out of time %llu, dry %llu, holds kept %llu, expired %llu",
                           static_cast<unsigned long long>(t.started), static_cast<unsigned long long>(t.out_of_time),
                           static_cast<unsigned long long>(t.dry), static_cast<unsigned long long>(t.holds_kept),
                           static_cast<unsigned long long>(t.holds_expired));
  const auto vm = [&](const char* name, mediator::Vgpu* v) {
    if (!v) return;
    out += strfmt("; %s: %zu queued, gpu %llu us, channel 0 state 0x%x", name, host_->queued_submissions(v->id()),
                  static_cast<unsigned long long>(host_->gpu_ns(v->id()) / 1000),
                  host_->physical_state(v->pchid_of(0)));
  };
  vm("victim", victim_vgpu_);
  for (const auto& k : kept_)
    if (k) vm(mode_name(k->mode), k->vgpu);
  if (making) {
    const std::string name = std::string(mode_name(making->mode)) + " being made";
    vm(name.c_str(), making->vgpu);
  }
  return out;
}

uint64_t Fixture::foreign_vram(const Attacker& a, uint64_t victim_gaddr) const {
  return victim_vgpu_->partition().base - a.partition_base() + victim_gaddr;
}

uint64_t Fixture::foreign_ram(const Attacker& a, uint64_t offset) const {
  if (!a.vgpu) return VM_RAM + offset;
  const uint64_t mine = a.vgpu->guest_ram().regions().at(0).host_bus;
  const uint64_t theirs = victim_vgpu_->guest_ram().regions().at(0).host_bus;
  return theirs - mine + offset;
}

void run_guest_program(Surface surface, const uint8_t* data, size_t size) {
  Fixture& f = Fixture::get();
  if (f.reusing()) {
    std::lock_guard lock(history_mutex());
    // A fresh attacker drops the inputs before the last one's: those of the
    // attacker torn down last stay, since what it left on the device (work
    // a reset did not recall) may fail the fresh one's setup.
    static size_t last_fresh = 0;  // where the last fresh attacker's inputs start
    if (f.all_fresh()) {
      history().erase(history().begin(), history().begin() + static_cast<ptrdiff_t>(last_fresh));
      last_fresh = history().size();
    }
    if (history().size() == MAX_HISTORY) {
      history().erase(history().begin());
      last_fresh -= last_fresh > 0;
    }
    history().emplace_back(data, data + size);
    input_seq.fetch_add(1, std::memory_order_acq_rel);
    input_started_ns.store(steady_ns(), std::memory_order_release);
  }
  Input in(data, size);
  const uint8_t first = in.u8();
  Mode mode = Mode::fv_opt;
  if (surface == Surface::device)
    mode = Mode::native;
  else if (surface == Surface::pv)
    mode = Mode::pv;
  else {
    constexpr Mode modes[] = {Mode::fv_naive, Mode::fv_opt, Mode::pv};
    mode = modes[first % 3];
  }
  const bool victim = mode != Mode::native;
  Attacker& a = f.attacker(mode);
  if (victim) f.victim_begin();  // the victim's fill runs during the attacker's operations
  run_ops(surface, a, in);
  f.after_input(a);
  if (victim) f.victim_end();
  input_started_ns.store(0, std::memory_order_release);
}

}  // namespace vgpu::fuzz
