// SPDX-License-Identifier: GPL-2.0-or-later
// The fake device (device.h): VRAM blocks in host memory, mapped at the
// guest's VAs; the work runs at once on the worker's thread.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>
#include "gpu/kernels/kernels.h"
#include "gpu/ptx/interpreter.h"
#include "worker/block_map.h"
#include "worker/ctaid_rewrite.h"
#include "worker/device.h"
#include "worker/module_globals.h"

namespace vgpu::worker {
namespace {

class FakeDevice final : public WorkerDevice {
 public:
  std::string name() const override { return "fake device (host memory)"; }

  DeviceStatus map_block(uint64_t va, uint32_t block, bool writable) override {
    auto& b = blocks_[block];
    if (b.empty()) b.resize(BLOCK_BYTES);
    mapped_[va] = Mapping{block, writable};
    return {};
  }
  DeviceStatus unmap_block(uint64_t va) override {
    mapped_.erase(va);
    return {};
  }
  // Fills and copies go a block at most at a time, so that a command of
  // any size faults where the GPU would without a buffer of its size.
  DeviceStatus fill32(uint32_t, uint64_t va, uint32_t value, uint64_t words) override {
    const uint64_t per_chunk = std::min<uint64_t>(words, BLOCK_BYTES / sizeof value);
    std::vector<std::byte> chunk(per_chunk * sizeof value);
    for (uint64_t i = 0; i < per_chunk; i++) memcpy(chunk.data() + i * sizeof value, &value, sizeof value);
    for (uint64_t done = 0; done < words;) {
      uint64_t n = std::min(words - done, per_chunk);
      if (auto s = access(va + done * sizeof value, chunk.data(), n * sizeof value, true); !s) return s;
      done += n;
    }
    return {};
  }
  DeviceStatus copy(uint32_t, uint64_t dst, uint64_t src, uint64_t bytes) override {
    std::vector<std::byte> tmp(std::min<uint64_t>(bytes, BLOCK_BYTES));
    for (uint64_t done = 0; done < bytes;) {  // front to back, as one memmove of non-overlapping ranges
      uint64_t n = std::min<uint64_t>(bytes - done, BLOCK_BYTES);
      if (auto s = access(src + done, tmp.data(), n, false); !s) return s;
      if (auto s = access(dst + done, tmp.data(), n, true); !s) return s;
      done += n;
    }
    return {};
  }
  DeviceStatus write(uint32_t, uint64_t va, const std::byte* host, uint64_t bytes) override {
    return access(va, const_cast<std::byte*>(host), bytes, true);
  }
  DeviceStatus read(uint32_t, uint64_t va, std::byte* host, uint64_t bytes) override {
    return access(va, host, bytes, false);
  }
  DeviceStatus spin(uint32_t, uint64_t ns) override {
    auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    while (std::chrono::steady_clock::now() < end) {
    }
    return {};
  }
  // Prepared as the GPU's worker prepares a module (parsed, variables
  // placed, %ctaid rewritten), refused where that fails, and parsed again
  // for the interpreter, which runs its launches.
  DeviceStatus load_module(uint32_t slot, const char* text, uint64_t bytes, uint64_t data_va) override {
    std::string why;
    auto placed = module_for_device(std::string_view(text, strnlen(text, bytes)), data_va, why);
    if (!placed) return std::unexpected(DeviceFault{0, 0, why, true});
    Loaded m;
    m.text = rewrite_ctaid(*placed);
    auto parsed = ptx::parse_module(m.text.text);
    if (!parsed)
      return std::unexpected(DeviceFault{0, 0, "the prepared module does not parse: " + parsed.error().message, true});
    m.module = *parsed;
    modules_[slot] = std::move(m);
    return {};
  }
  DeviceStatus launch(uint32_t, const LaunchArgs& a, const std::byte* params) override;
  DeviceStatus kernel(uint32_t, const KernelCall& call) override;
  DeviceStatus fence(uint32_t, std::atomic<uint32_t>* word, uint32_t seq) override {
    word->store(seq, std::memory_order_release);
    return {};
  }
  DeviceStatus poll_error() override { return {}; }
  bool busy() override { return false; }

 private:
  struct Mapping {
    uint32_t block;
    bool writable;
  };
  // Copies between `host` and the mapped bytes at `va`; an unmapped or
  // read-only (for a write) VA faults as the GPU's MMU would.
  DeviceStatus access(uint64_t va, std::byte* host, uint64_t bytes, bool to_device) {
    uint64_t done = 0;
    while (done < bytes) {
      uint64_t at = va + done;
      uint64_t base = at - at % BLOCK_BYTES;
      auto it = mapped_.find(base);
      if (it == mapped_.end() || (to_device && !it->second.writable))
        return std::unexpected(
            DeviceFault{FAKE_FAULT, at,
                        it == mapped_.end() ? "an access to an unmapped address" : "a write to a read-only block"});
      uint64_t n = std::min(bytes - done, base + BLOCK_BYTES - at);
      std::byte* dev = blocks_[it->second.block].data() + (at - base);
      if (to_device)
        memcpy(dev, host + done, n);
      else
        memcpy(host + done, dev, n);
      done += n;
    }
    return {};
  }
  struct Loaded {
    RewrittenModule text;
    std::shared_ptr<const ptx::Module> module;
  };
  // Global memory as a kernel on this device sees it: the mapped blocks.
  class Blocks final : public ptx::GlobalMemory {
   public:
    explicit Blocks(FakeDevice& d) : d_(d) {}
    std::expected<std::byte*, ptx::MemoryFault> access(uint64_t va, uint32_t bytes, bool write) override {
      const uint64_t base = va - va % BLOCK_BYTES;
      auto it = d_.mapped_.find(base);
      if (it == d_.mapped_.end() || (write && !it->second.writable) || va - base + bytes > BLOCK_BYTES)
        return std::unexpected(ptx::MemoryFault{va, write, "not mapped in the worker's aperture"});
      return d_.blocks_[it->second.block].data() + (va - base);
    }

   private:
    FakeDevice& d_;
  };
  std::map<uint32_t, std::vector<std::byte>> blocks_;
  std::map<uint64_t, Mapping> mapped_;
  std::map<uint32_t, Loaded> modules_;
};

// What CUDA says for what the interpreter found: a fault is the GPU's 700
// with the VA, the others the driver's codes for the same events.
DeviceFault launch_fault(const ptx::ExecError& e) {
  const std::string why = std::string("interpreter: ") + ptx::exec_status_name(e.status) + ": " + e.message;
  switch (e.status) {
    case ptx::ExecStatus::mmu_fault: return DeviceFault{FAKE_FAULT, e.va, why};
    case ptx::ExecStatus::misaligned: return DeviceFault{CUDA_MISALIGNED_ADDRESS, e.va, why};
    case ptx::ExecStatus::trap: return DeviceFault{CUDA_LAUNCH_FAILED, 0, why};
    case ptx::ExecStatus::illegal: return DeviceFault{CUDA_ILLEGAL_INSTRUCTION, 0, why};
    default: return DeviceFault{CUDA_LAUNCH_OUT_OF_RESOURCES, 0, why};
  }
}

// The launch in the pieces the GPU's worker would launch, each a run of
// the interpreter over the mapped blocks (a hung kernel hangs the worker
// until its deadline, as on the GPU).
DeviceStatus FakeDevice::launch(uint32_t, const LaunchArgs& a, const std::byte* params) {
  auto it = modules_.find(a.slot);
  if (it == modules_.end() || a.entry >= it->second.text.entries.size())
    return std::unexpected(DeviceFault{0, 0, "launch of an empty slot or a missing entry"});
  const Loaded& m = it->second;
  std::vector<std::byte> buf(params, params + a.param_bytes);
  const uint32_t at = slice_params_offset(a.param_bytes);
  if (m.text.sliceable) buf.resize(at + SLICE_PARAM_WORDS * sizeof(uint32_t));
  Blocks memory(*this);
  for (const GridPiece& p : grid_pieces(a.grid, m.text.sliceable ? a.piece_blocks : 0)) {
    if (m.text.sliceable) {
      const uint32_t words[SLICE_PARAM_WORDS] = {p.offset[0], p.offset[1], p.offset[2],
                                                 a.grid[0],   a.grid[1],   a.grid[2]};
      memcpy(buf.data() + at, words, sizeof words);
    }
    ptx::LaunchConfig c;
    c.entry = a.entry;
    c.grid = {p.grid[0], p.grid[1], p.grid[2]};
    c.block = {a.block[0], a.block[1], a.block[2]};
    c.dynamic_shared_bytes = a.shared_bytes;
    c.params = buf;
    auto r = ptx::run_blocks(*m.module, c, memory, 0, uint64_t{p.grid[0]} * p.grid[1] * p.grid[2]);
    if (!r) return std::unexpected(launch_fault(r.error()));
  }
  return {};
}

// The model's kernel (gpu/kernels) on host copies of the buffers: each
// gathered from the mapped blocks (an unmapped byte faults, as on the
// GPU), the kernel run, the written ones put back. Buffers that alias get
// copies, not views: the model leaves such results unspecified anyway.
DeviceStatus FakeDevice::kernel(uint32_t, const KernelCall& call) {
  const auto uses = call.footprint.buffers();
  std::vector<std::vector<float>> buf(uses.size());
  for (size_t i = 0; i < uses.size(); ++i) {
    buf[i].resize(uses[i].bytes / sizeof(float));
    if (auto s = access(uses[i].va, reinterpret_cast<std::byte*>(buf[i].data()), uses[i].bytes, false); !s) return s;
  }
  namespace k = gpu::kernels;
  switch (call.kernel) {
    case cls::Kernel::saxpy: k::saxpy(kernel_args<cls::SaxpyArgs>(call.args).a, buf[0], buf[1]); break;
    case cls::Kernel::madd: k::madd(buf[0], buf[1], buf[2]); break;
    case cls::Kernel::sgemm:
      k::sgemm(kernel_args<cls::SgemmArgs>(call.args), buf[0].data(), buf[1].data(), buf[2].data());
      break;
    case cls::Kernel::conv2d:
      k::conv2d(kernel_args<cls::Conv2dArgs>(call.args), buf[0].data(), buf[1].data(), buf[2].data());
      break;
    case cls::Kernel::mriq: {
      const auto a = kernel_args<cls::MriqArgs>(call.args);
      k::mriq(a.num_k, a.num_x, buf[0].data(), buf[1].data(), buf[2].data(), buf[3].data(), buf[4].data(),
              buf[5].data(), buf[6].data(), buf[7].data(), buf[8].data());
      break;
    }
    default: return std::unexpected(DeviceFault{0, 0, "not a built-in of the worker"});
  }
  for (size_t i = 0; i < uses.size(); ++i)
    if (uses[i].writable())
      if (auto s = access(uses[i].va, reinterpret_cast<std::byte*>(buf[i].data()), uses[i].bytes, true); !s) return s;
  return {};
}

}  // namespace

std::unique_ptr<WorkerDevice> make_fake_device() { return std::make_unique<FakeDevice>(); }

}  // namespace vgpu::worker
