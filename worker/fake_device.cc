// SPDX-License-Identifier: GPL-2.0-or-later
// The fake device (device.h): VRAM blocks in host memory, mapped at the
// guest's VAs; the work runs at once on the worker's thread.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>
#include "worker/block_map.h"
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
  // placed), refused where that fails; no kernel runs here.
  DeviceStatus load_module(uint32_t, const char* text, uint64_t bytes, uint64_t data_va) override {
    std::string why;
    if (!module_for_device(std::string_view(text, strnlen(text, bytes)), data_va, why))
      return std::unexpected(DeviceFault{0, 0, why, true});
    return {};
  }
  DeviceStatus launch(uint32_t, const LaunchArgs&, const std::byte*) override {
    return std::unexpected(DeviceFault{0, 0, "the fake device runs no kernels (user kernels need the cuda device)"});
  }
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
  std::map<uint32_t, std::vector<std::byte>> blocks_;
  std::map<uint64_t, Mapping> mapped_;
};

}  // namespace

std::unique_ptr<WorkerDevice> make_fake_device() { return std::make_unique<FakeDevice>(); }

}  // namespace vgpu::worker
