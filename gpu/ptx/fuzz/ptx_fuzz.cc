// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: PTX text from a guest, through the parser and, when it
// parses, a launch of each of its first entries on the interpreter
// (docs/fuzzing.md). The launch sees a 64 KiB window of global memory
// and its pointer parameters point into it; every other address faults.
// Each launch is bounded by a budget of polls, so an endless loop ends as
// a timeout. What must hold: no crash, no sanitizer report, no leak, no
// hang (libFuzzer's -timeout), and every refusal is a ParseError or an
// ExecError with a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "gpu/ptx/interpreter.h"
#include "ptx/module.h"

namespace {

using namespace vgpu::ptx;

constexpr uint64_t WINDOW_VA = 0x10'0000'0000;
constexpr uint64_t WINDOW_BYTES = 64 * 1024;
constexpr uint32_t MAX_ENTRIES = 4;
constexpr uint32_t POLL_BUDGET = 64;  // polls of poll_every warp instructions each

class Window final : public GlobalMemory {
 public:
  std::expected<std::byte*, MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
    if (va < WINDOW_VA || va - WINDOW_VA > WINDOW_BYTES - bytes)
      return std::unexpected(MemoryFault{va, write, "unmapped"});
    return bytes_.data() + (va - WINDOW_VA);
  }

 private:
  std::vector<std::byte> bytes_ = std::vector<std::byte>(WINDOW_BYTES);
};

// Parameters: pointers (8 bytes) into the window, counts (4 bytes) small.
std::vector<std::byte> params_for(const EntryInfo& e) {
  std::vector<std::byte> p(e.param_bytes);
  for (const Param& q : e.params) {
    if (q.offset > p.size() || q.size > p.size() - q.offset) continue;
    const uint64_t ptr = WINDOW_VA + 0x100;
    const uint32_t count = 16;
    if (q.size == 8) std::memcpy(p.data() + q.offset, &ptr, 8);
    if (q.size == 4) std::memcpy(p.data() + q.offset, &count, 4);
  }
  return p;
}

void fail(const char* what) {
  (void)what;
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_module(text);
  if (!parsed) {
    if (parsed.error().message.empty()) fail("a refusal without a message");
    return 0;
  }
  const Module& m = **parsed;
  const uint32_t entries = static_cast<uint32_t>(m.entries().size());
  for (uint32_t i = 0; i < entries && i < MAX_ENTRIES; ++i) {
    Window memory;
    const std::vector<std::byte> params = params_for(m.entries()[i]);
    LaunchConfig launch{.entry = i,
                        .grid = {2, 1, 1},
                        .block = {64, 1, 1},
                        .dynamic_shared_bytes = 256,
                        .params = params,
                        .data_va = WINDOW_VA + WINDOW_BYTES / 2};
    uint32_t polls = 0;
    ExecControl control{.keep_going = [&] { return ++polls <= POLL_BUDGET; }, .poll_every = 256};
    auto ran = run_blocks(m, launch, memory, 0, 2, ExecLimits{}, control);
    if (!ran && ran.error().message.empty()) fail("an exec error without a message");
  }
  return 0;
}
