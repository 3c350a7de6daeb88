// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/client/client_port.h"

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <thread>

#include "vgpu/regs.h"

namespace vgpu::vgpud {
namespace {
constexpr uint64_t PAGE = 4096;
uint32_t region_of(driver::Bar bar) { return static_cast<uint32_t>(bar); }
}  // namespace

Result<std::unique_ptr<ClientPort>> ClientPort::create(Client& client) {
  std::unique_ptr<ClientPort> port(new ClientPort(client));
  for (auto [w, region] : {std::pair{&port->bar1_, proto::REGION_BAR1}, std::pair{&port->bar3_, proto::REGION_BAR3}}) {
    w->size = client.bar_size(region);
    void* p = mmap(nullptr, w->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return fail(Errc::out_of_memory, std::string("client port: mmap: ") + std::strerror(errno));
    w->base = static_cast<std::byte*>(p);
    w->mapped.assign(w->size / PAGE, false);
  }
  port->refresh();
  return port;
}

IrqCounts ClientPort::interrupt_counts() {
  IrqCounts counts{};
  const proto::IrqStatus* st = client_.irq_status();
  for (size_t v = 0; v < counts.size(); ++v)
    counts[v] = std::atomic_ref<const uint64_t>(st->messages[v]).load(std::memory_order_acquire);
  return counts;
}

// The daemon moves a count before it signals the eventfd, so a message
// sent after `seen` was read leaves the eventfd readable: poll returns at
// once and no wake-up is lost.
bool ClientPort::wait_interrupt(const IrqCounts& seen, uint64_t timeout_ns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (;;) {
    if (interrupt_counts() != seen) return true;
    if (client_.lost()) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd fd{client_.irq_fd(), POLLIN, 0};
    // Rounded up: a wait never ends before its timeout.
    const int r = poll(&fd, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (r > 0) {
      uint64_t n;
      (void)!read(client_.irq_fd(), &n, sizeof n);
    }
  }
}

ClientPort::~ClientPort() {
  for (Window* w : {&bar1_, &bar3_})
    if (w->base) munmap(w->base, w->size);
}

void ClientPort::remap(Window& w, uint32_t region) {
  // Everything back to no access, then the direct ranges onto the VM's VRAM fd.
  mmap(w.base, w.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  std::fill(w.mapped.begin(), w.mapped.end(), false);
  for (const proto::LayoutRange& r : client_.layout(region)) {
    if (r.trapped || r.bar_offset + r.size > w.size) continue;
    if (mmap(w.base + r.bar_offset, r.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, client_.vram_fd(),
             static_cast<off_t>(r.vram_offset)) == MAP_FAILED)
      continue;  // stays trapped
    for (uint64_t p = r.bar_offset / PAGE; p < (r.bar_offset + r.size) / PAGE; ++p) w.mapped[p] = true;
  }
}

void ClientPort::refresh() {
  if (client_.lost() || client_.layout_generation() == generation_) return;
  generation_ = client_.layout_generation();
  remap(bar1_, proto::REGION_BAR1);
  remap(bar3_, proto::REGION_BAR3);
}

ClientPort::Window* ClientPort::window(driver::Bar bar) {
  if (bar == driver::Bar::bar1) return &bar1_;
  if (bar == driver::Bar::bar3) return &bar3_;
  return nullptr;
}

uint32_t* ClientPort::direct_word(driver::Bar bar, uint64_t offset) {
  Window* w = window(bar);
  if (!w || offset % sizeof(uint32_t) || client_.lost()) return nullptr;
  refresh();
  if (!w->mapped[offset / PAGE]) return nullptr;
  return reinterpret_cast<uint32_t*>(w->base + offset);
}

uint32_t ClientPort::read32(driver::Bar bar, uint64_t offset) {
  if (!decodes(bar, offset)) return BUS_MISS;
  if (uint32_t* p = direct_word(bar, offset)) return std::atomic_ref<uint32_t>(*p).load(std::memory_order_acquire);
  return client_.read32(region_of(bar), offset);
}

void ClientPort::write32(driver::Bar bar, uint64_t offset, uint32_t value) {
  if (!decodes(bar, offset)) return;
  if (uint32_t* p = direct_word(bar, offset))
    std::atomic_ref<uint32_t>(*p).store(value, std::memory_order_release);
  else
    client_.write32(region_of(bar), offset, value);
}

std::span<std::byte> ClientPort::map(driver::Bar bar, uint64_t offset, uint64_t len) {
  Window* w = window(bar);
  if (!w || client_.lost()) return {};
  client_.poll();
  refresh();
  if (len == 0 || offset > w->size || len > w->size - offset) return {};
  for (uint64_t p = offset / PAGE; p <= (offset + len - 1) / PAGE; ++p)
    if (!w->mapped[p]) return {};
  return {w->base + offset, len};
}

uint64_t ClientPort::bar_size(driver::Bar bar) const {
  if (bar == driver::Bar::bar0) return regs::pci::BAR0_SIZE;
  return client_.bar_size(region_of(bar));
}

void ClientPort::relax() { std::this_thread::yield(); }

}  // namespace vgpu::vgpud
