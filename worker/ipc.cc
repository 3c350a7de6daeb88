// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/ipc.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace vgpu::worker {

const char* op_name(Op op) {
  switch (op) {
    case Op::nop: return "nop";
    case Op::map: return "map";
    case Op::unmap: return "unmap";
    case Op::fill32: return "fill32";
    case Op::copy: return "copy";
    case Op::write: return "write";
    case Op::read: return "read";
    case Op::spin: return "spin";
    case Op::load_module: return "load_module";
    case Op::launch: return "launch";
    case Op::stop: return "stop";
    case Op::kernel: return "kernel";
  }
  return "unknown";
}

const char* state_name(WorkerState s) {
  switch (s) {
    case WorkerState::starting: return "starting";
    case WorkerState::ready: return "ready";
    case WorkerState::failed: return "failed";
    case WorkerState::dead: return "dead";
  }
  return "unknown";
}

namespace {
Result<Region*> map_region(int fd) {
  void* p = mmap(nullptr, sizeof(Region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail(Errc::io_error, std::string("mmap of the worker region: ") + strerror(errno));
  return static_cast<Region*>(p);
}
}  // namespace

Result<std::unique_ptr<Shared>> Shared::create() {
  int fd = memfd_create("vgpu-worker", MFD_CLOEXEC);
  if (fd < 0) return fail(Errc::io_error, std::string("memfd_create: ") + strerror(errno));
  if (ftruncate(fd, sizeof(Region)) != 0) {
    close(fd);
    return fail(Errc::io_error, std::string("ftruncate of the worker region: ") + strerror(errno));
  }
  auto r = map_region(fd);
  if (!r) {
    close(fd);
    return std::unexpected(r.error());
  }
  // A new memfd reads as zeros: every atomic starts at 0.
  (*r)->header.magic = IPC_MAGIC;
  (*r)->header.version = IPC_VERSION;
  return std::unique_ptr<Shared>(new Shared(fd, *r));
}

Result<std::unique_ptr<Shared>> Shared::attach(int fd) {
  auto r = map_region(fd);
  if (!r) return std::unexpected(r.error());
  if ((*r)->header.magic != IPC_MAGIC || (*r)->header.version != IPC_VERSION) {
    munmap(*r, sizeof(Region));
    return fail(Errc::invalid_argument, "the worker region has the wrong magic or version");
  }
  return std::unique_ptr<Shared>(new Shared(fd, *r));
}

Shared::~Shared() {
  munmap(region_, sizeof(Region));
  close(fd_);
}

bool ring_push(Region& r, const Command& c) {
  uint32_t head = r.head.value.load(std::memory_order_relaxed);
  uint32_t tail = r.tail.value.load(std::memory_order_acquire);
  if (head - tail >= RING_SLOTS) return false;
  r.slots[head % RING_SLOTS] = c;
  r.head.value.store(head + 1, std::memory_order_release);
  return true;
}

bool ring_pop(Region& r, Command& c) {
  uint32_t tail = r.tail.value.load(std::memory_order_relaxed);
  uint32_t head = r.head.value.load(std::memory_order_acquire);
  if (head == tail) return false;
  c = r.slots[tail % RING_SLOTS];
  r.tail.value.store(tail + 1, std::memory_order_release);
  return true;
}

bool ring_empty(const Region& r) {
  return r.head.value.load(std::memory_order_acquire) == r.tail.value.load(std::memory_order_acquire);
}

}  // namespace vgpu::worker
