// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/worker_loop.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include "worker/block_map.h"
#include "worker/builtin.h"

namespace vgpu::worker {
namespace {

// While work is queued the worker wakes this often to ask for errors.
using Clock = std::chrono::steady_clock;
constexpr int BUSY_POLL_MS = 1;
// While polling with work in flight, the device is asked this often.
constexpr uint64_t QUERY_EVERY_NS = 20'000;

void record_error(Region& r, const Command& c, const DeviceFault& f) {
  ErrorRecord& e = r.header.error;
  e.cuda_code = f.code;
  e.seq = c.seq;
  e.stream = c.stream;
  e.addr = f.addr;
  // A failure found while polling (no command of its own): queued work.
  std::string m = std::string(c.op == Op::nop ? "queued work" : op_name(c.op)) + ": " + f.message;
  snprintf(e.message, sizeof e.message, "%s", m.c_str());
  e.set.store(1, std::memory_order_release);
  r.header.state.store(static_cast<uint32_t>(WorkerState::failed), std::memory_order_release);
}

// A module the device refused with its context intact: the reason for the
// mediator, and the worker goes on.
void record_refusal(Region& r, const Command& c, const DeviceFault& f) {
  ModuleRefusal& m = r.header.refusal;
  m.stream = c.stream;
  m.cuda_code = f.code;
  snprintf(m.message, sizeof m.message, "load_module: %s", f.message.c_str());
  m.seq.store(c.seq, std::memory_order_release);
}

DeviceFault bad_command(const char* what) { return DeviceFault{0, 0, std::string("bad command: ") + what}; }

bool bulk_range_ok(uint64_t offset, uint64_t bytes) { return offset <= BULK_BYTES && bytes <= BULK_BYTES - offset; }

DeviceStatus apply_changes(WorkerDevice& d, const std::vector<MappedBlocks::Change>& changes) {
  for (const auto& ch : changes) {
    auto s = ch.kind == MappedBlocks::Change::map ? d.map_block(ch.va, ch.block, ch.writable) : d.unmap_block(ch.va);
    if (!s) return s;
  }
  return {};
}

// A command's VA in the physical window where the device put the window.
uint64_t placed(const WorkerDevice& d, uint64_t va) {
  return va >= PHYS_BASE && va - PHYS_BASE < PHYS_BYTES ? va - PHYS_BASE + d.phys_window() : va;
}

// A built-in's command: its pointers moved into the physical window, its
// block checked as the model checks it, then run.
DeviceStatus run_kernel(WorkerDevice& d, Command c) {
  const uint32_t pointers = c.a <= UINT32_MAX ? pointer_fields(static_cast<cls::Kernel>(c.a)) : 0;
  for (uint32_t i = 0; i < pointers && (i + 1) * sizeof(uint64_t) <= c.c; ++i) {
    uint64_t va;
    std::memcpy(&va, c.args + i * sizeof va, sizeof va);
    va = placed(d, va);
    std::memcpy(c.args + i * sizeof va, &va, sizeof va);
  }
  auto call = kernel_call(c);
  if (!call) return std::unexpected(bad_command(call.error().message.c_str()));
  return d.kernel(c.stream, *call);
}

DeviceStatus execute(Region& r, WorkerDevice& d, MappedBlocks& mapped, Command c) {
  if (c.op == Op::map || c.op == Op::unmap || c.op == Op::fill32 || c.op == Op::copy || c.op == Op::write ||
      c.op == Op::read)
    c.a = placed(d, c.a);  // the destination (or only) VA
  if (c.op == Op::copy) c.b = placed(d, c.b);
  switch (c.op) {
    case Op::nop:
    case Op::stop: return {};
    case Op::map:
      if (c.a % BLOCK_BYTES != 0 || c.c > UINT32_MAX) return std::unexpected(bad_command("map not 2 MiB aligned"));
      return apply_changes(d, mapped.update(BlockRun{c.a, static_cast<uint32_t>(c.b), static_cast<uint32_t>(c.c),
                                                     !(c.flags & MAP_READ_ONLY)}));
    case Op::unmap:
      if (c.c > UINT32_MAX) return std::unexpected(bad_command("unmap count"));
      return apply_changes(d, mapped.remove(c.a, static_cast<uint32_t>(c.c)));
    case Op::fill32: return d.fill32(c.stream, c.a, static_cast<uint32_t>(c.b), c.c);
    case Op::copy: return d.copy(c.stream, c.a, c.b, c.c);
    case Op::write:
      if (!bulk_range_ok(c.b, c.c)) return std::unexpected(bad_command("write outside the bulk window"));
      return d.write(c.stream, c.a, r.bulk + c.b, c.c);
    case Op::read:
      if (!bulk_range_ok(c.b, c.c)) return std::unexpected(bad_command("read outside the bulk window"));
      return d.read(c.stream, c.a, r.bulk + c.b, c.c);
    case Op::spin: return d.spin(c.stream, c.a);
    case Op::load_module:
      if (!bulk_range_ok(c.b, c.c)) return std::unexpected(bad_command("module outside the bulk window"));
      return d.load_module(static_cast<uint32_t>(c.a), reinterpret_cast<const char*>(r.bulk + c.b), c.c, c.data_va);
    case Op::launch:
      if (!bulk_range_ok(c.launch.param_offset, c.launch.param_bytes))
        return std::unexpected(bad_command("parameters outside the bulk window"));
      return d.launch(c.stream, c.launch, r.bulk + c.launch.param_offset);
    case Op::kernel: return run_kernel(d, c);
  }
  return std::unexpected(bad_command("unknown operation"));
}

// Polls the ring while the device has work in flight (up to
// device_poll_ns after the last command, asking it for completion and
// errors every QUERY_EVERY_NS) and idle_poll_ns after that, so that the mediator's next
// command after a fence needs no wake-up (as PFIFO polls a device's result,
// docs/cuda.md). True when a command came.
bool poll_ring(Region& r, WorkerDevice& d, const LoopOptions& o, Clock::time_point last_command) {
  auto start = Clock::now(), last_busy = start, next_query = start;
  for (;;) {
    if (!ring_empty(r)) return true;
    auto now = Clock::now();
    if (d.busy()) {
      if (now - last_command > std::chrono::nanoseconds(o.device_poll_ns)) return false;
      if (now >= next_query) {
        if (!d.poll_error()) return false;  // the loop reports it
        next_query = now + std::chrono::nanoseconds(QUERY_EVERY_NS);
      }
      last_busy = now;
    } else if (now - last_busy > std::chrono::nanoseconds(o.idle_poll_ns)) {
      return false;
    }
  }
}

// Waits for a doorbell: polls (above), then blocks on the eventfd (waking
// every BUSY_POLL_MS while the device has work, to ask it for errors).
// False: the process that started the worker ended.
bool wait_for_work(Region& r, int bell_fd, WorkerDevice& d, const LoopOptions& o, Clock::time_point last_command) {
  if (poll_ring(r, d, o, last_command)) return true;
  r.head.sleeping.store(1, std::memory_order_seq_cst);
  bool parent_alive = true;
  if (ring_empty(r)) {
    pollfd p[2] = {{bell_fd, POLLIN, 0}, {o.parent_fd, POLLIN, 0}};  // a negative fd is skipped
    if (poll(p, 2, d.busy() ? BUSY_POLL_MS : -1) > 0) {
      if (p[0].revents & POLLIN) {
        uint64_t n;
        ssize_t got = ::read(bell_fd, &n, sizeof n);
        (void)got;
      }
      parent_alive = (p[1].revents & POLLIN) == 0;
    }
  }
  r.head.sleeping.store(0, std::memory_order_relaxed);
  return parent_alive;
}

}  // namespace

int run_loop(Region& r, int bell_fd, WorkerDevice& d, const LoopOptions& o) {
  MappedBlocks mapped;
  Clock::time_point last_command = Clock::now();
  r.header.state.store(static_cast<uint32_t>(WorkerState::ready), std::memory_order_release);
  for (;;) {
    Command c;
    if (!ring_pop(r, c)) {
      if (auto s = d.poll_error(); !s) {
        record_error(r, Command{Op::nop, 0, 0, 0, 0, 0, 0, {}}, s.error());
        return EXIT_DEVICE_ERROR;
      }
      if (!wait_for_work(r, bell_fd, d, o, last_command)) return 0;  // no one left to serve
      continue;
    }
    last_command = Clock::now();
    if (o.die_at_seq != 0 && c.seq == o.die_at_seq) abort();
    if (c.op == Op::stop) return 0;
    DeviceStatus s = c.stream < NUM_STREAMS ? execute(r, d, mapped, c) : std::unexpected(bad_command("stream"));
    if (!s && s.error().refused && c.op == Op::load_module) {
      record_refusal(r, c, s.error());
      s = {};
    }
    if (s && (c.flags & FENCE)) s = d.fence(c.stream, &r.fence[c.stream], c.seq);
    if (!s) {
      record_error(r, c, s.error());
      return EXIT_DEVICE_ERROR;
    }
  }
}

}  // namespace vgpu::worker
