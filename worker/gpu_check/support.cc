// SPDX-License-Identifier: GPL-2.0-or-later
#include <algorithm>
#include <fstream>
#include <sstream>
#include "worker/gpu_check/check.h"

namespace vgpu::worker::check {

std::unique_ptr<WorkerHost> spawn_cuda(const std::string& binary) {
  WorkerOptions o;
  o.binary = binary;
  o.device = "cuda";
  o.respawn_limit = 100;
  auto h = WorkerHost::spawn(o);
  if (!h) {
    fprintf(stderr, "cannot start the cuda worker: %s\n", h.error().what().c_str());
    return nullptr;
  }
  return std::move(*h);
}


std::string run(WorkerHost& h, Command c, std::chrono::nanoseconds deadline) {
  auto t = h.submit(c);
  if (!t) return t.error().what();
  auto w = h.wait(*t, deadline);
  return w ? "" : w.error().reason;
}

std::string put_image(WorkerHost& h, const Image& img) {
  if (auto e = run(h, make_command(Op::map, 0, APERTURE_BASE, 0, IMAGE_BLOCKS)); !e.empty()) return e;
  memcpy(h.bulk(), img.bytes().data(), IMAGE_BYTES);
  return run(h, make_command(Op::write, 0, APERTURE_BASE, 0, IMAGE_BYTES));
}

std::string get_image(WorkerHost& h, Image& img) {
  if (auto e = run(h, make_command(Op::read, 0, APERTURE_BASE, 0, IMAGE_BYTES)); !e.empty()) return e;
  memcpy(img.bytes().data(), h.bulk(), IMAGE_BYTES);
  return "";
}

std::string load(WorkerHost& h, uint32_t slot, const std::string& ptx, uint64_t data_va) {
  memcpy(h.bulk(), ptx.data(), ptx.size());
  h.bulk()[ptx.size()] = std::byte{0};
  Command c = make_command(Op::load_module, 0, slot, 0, ptx.size() + 1);
  c.data_va = data_va;
  auto t = h.submit(c);
  if (!t) return t.error().what();
  if (auto w = h.wait(*t, 60s); !w) return w.error().reason;
  auto refused = h.refusal(*t);  // the worker goes on; the module is not loaded
  return refused ? "load_module refused: " + *refused : "";
}

Command launch_command(WorkerHost& h, uint32_t stream, uint32_t slot, uint32_t entry, const uint32_t grid[3],
                       const uint32_t block[3], const std::vector<std::byte>& params, uint32_t piece_blocks) {
  // Parameters at the bulk window's end, past any image bytes.
  uint64_t at = BULK_BYTES - 8192 - 4096 * stream % (BULK_BYTES / 2);
  memcpy(h.bulk() + at, params.data(), params.size());
  Command c = make_command(Op::launch, stream);
  c.launch = LaunchArgs{slot,
                        entry,
                        {grid[0], grid[1], grid[2]},
                        {block[0], block[1], block[2]},
                        0,
                        static_cast<uint32_t>(params.size()),
                        at,
                        piece_blocks};
  return c;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace vgpu::worker::check
