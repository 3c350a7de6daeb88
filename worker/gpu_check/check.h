// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-worker-check: the worker on a real GPU (docs/cuda-worker.md,
// "State"): user kernels against the PTX interpreter, containment of a
// faulting and a runaway VM, and the launch, copy and scale figures beside
// direct CUDA. Needs a GPU; not part of the CI suite.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#include "gpu/ptx/flat_memory.h"
#include "worker/block_map.h"
#include "worker/worker_host.h"

namespace vgpu::worker::check {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// An image of the guest memory user kernels see: IMAGE_BYTES at
// APERTURE_BASE (4 VRAM blocks, one bulk window), handed out in steps of
// 256 bytes; the interpreter runs on it as it is.
inline constexpr uint64_t IMAGE_BYTES = BULK_BYTES;
inline constexpr uint32_t IMAGE_BLOCKS = static_cast<uint32_t>(IMAGE_BYTES / BLOCK_BYTES);

struct Image : ptx::FlatMemory {
  Image() : FlatMemory(APERTURE_BASE, IMAGE_BYTES, 256) {}
  uint64_t data_va = 0;  // the module's data segment, if it has variables
};

// Fails the check with a message (printed, exit status 1 at the end).
struct Checker {
  int failures = 0;
  void expect(bool ok, const std::string& what) {
    if (!ok) failures++;
    printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    fflush(stdout);
  }
};

std::unique_ptr<WorkerHost> spawn_cuda(const std::string& binary);
// Submits and waits; the failure's reason, or "" on success.
std::string run(WorkerHost& h, Command c, std::chrono::nanoseconds deadline = 10s);
// Maps the image's blocks and writes it; reads it back.
std::string put_image(WorkerHost& h, const Image& img);
std::string get_image(WorkerHost& h, Image& img);
std::string load(WorkerHost& h, uint32_t slot, const std::string& ptx, uint64_t data_va = 0);
// A user launch of entry `entry` of `slot` with packed parameters.
Command launch_command(WorkerHost& h, uint32_t stream, uint32_t slot, uint32_t entry, const uint32_t grid[3],
                       const uint32_t block[3], const std::vector<std::byte>& params, uint32_t piece_blocks = 0);
double median(std::vector<double> v);
double percentile(std::vector<double> v, double p);
std::string read_file(const std::string& path);

int corpus_check(const std::string& binary, const std::string& ptx_dir, Checker& c);
int contain_check(const std::string& binary, Checker& c);
int bench(const std::string& binary, const std::string& self, const std::string& json, Checker& c);
int direct_child(int argc, char** argv);

}  // namespace vgpu::worker::check
