// SPDX-License-Identifier: GPL-2.0-or-later
#include "vgpud/session.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/text.h"
#include "mediator/vgpu_config.h"
#include "vgpu/regs.h"

namespace vgpu::vgpud {
namespace {

// A client that stops reading its replies is disconnected after this long
// instead of holding its session thread in send().
constexpr timeval SEND_TIMEOUT{5, 0};

constexpr uint64_t SECOND_NS = 1'000'000'000;
constexpr uint64_t STAT_BLOCK = 512;  // st_blocks' unit

gpu::Bar to_gpu(uint32_t region) { return region == proto::REGION_BAR1 ? gpu::Bar::bar1 : gpu::Bar::bar3; }

std::vector<proto::LayoutRange> layout_of(const mediator::Vgpu& v, gpu::Bar bar) {
  const uint64_t size = v.bar_size(bar);
  const shadow::Partition& part = v.partition();
  std::vector<proto::LayoutRange> out;
  uint64_t at = 0;
  for (const mediator::DirectRange& r : v.direct_ranges(bar)) {
    // Read-only pages stay trapped (writes must fault); so would anything
    // outside the partition, which the VM's VRAM fd does not hold.
    if (r.read_only || r.vram_addr < part.base || !part.contains(r.vram_addr - part.base, r.bytes)) continue;
    if (r.bar_offset > at) out.push_back({at, 0, r.bar_offset - at, 1, 0});
    out.push_back({r.bar_offset, r.vram_addr - part.base, r.bytes, 0, 0});
    at = r.bar_offset + r.bytes;
  }
  if (at < size) out.push_back({at, 0, size - at, 1, 0});
  return out;
}

proto::Refusal refusal_for(const Error& e) {
  if (e.code == Errc::invalid_argument) return proto::Refusal::bad_option;
  if (e.code == Errc::out_of_memory)
    return e.message.find("channels") != std::string::npos ? proto::Refusal::too_many_vms
                                                           : proto::Refusal::vram_exhausted;
  return proto::Refusal::internal;
}

// The vGPU an ATTACH asks for, with the daemon's slicing and watchdog.
mediator::VgpuConfig config_of(const proto::AttachRequest& req, const std::string& name, const SessionHost& daemon) {
  mediator::VgpuConfig c;
  c.name = name;
  c.vram_bytes = req.vram_bytes;
  c.channels = req.channels;
  c.weight = req.weight;
  c.bar_remap = req.options & proto::OPT_BAR_REMAP;
  c.lazy_shadow = req.options & proto::OPT_LAZY_SHADOW;
  c.pv = req.options & proto::OPT_PV;
  c.slice_blocks = daemon.slice_blocks();
  c.watchdog_ms = daemon.watchdog_ms();
  c.own_vram_fd = true;
  return c;
}

}  // namespace

void IrqSink::deliver(bool level) {
  std::atomic_ref<uint32_t>(status->level).store(level, std::memory_order_release);
  if (level) std::atomic_ref<uint64_t>(status->edges).fetch_add(1, std::memory_order_acq_rel);
  const uint64_t one = 1;
  (void)!write(eventfd.get(), &one, sizeof one);
}

void IrqSink::message(regs::pci::MsiVector vector) {
  const auto v = static_cast<unsigned>(vector);
  if (v >= regs::pci::MSI_VECTORS) return;
  std::atomic_ref<uint64_t>(status->messages[v]).fetch_add(1, std::memory_order_acq_rel);
  const uint64_t one = 1;
  (void)!write(eventfd.get(), &one, sizeof one);
}

IrqSink::~IrqSink() {
  if (status) munmap(status, proto::IRQ_STATUS_BYTES);
}

Session::Session(SessionHost& daemon, UniqueFd fd, PeerCred peer) : daemon_(daemon), fd_(std::move(fd)), peer_(peer) {
  setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &SEND_TIMEOUT, sizeof SEND_TIMEOUT);
}

Session::~Session() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void Session::start() {
  thread_ = std::thread([this] { main(); });
}

void Session::stop() { shutdown(fd_.get(), SHUT_RDWR); }

void Session::main() {
  std::string why;
  for (;;) {
    // Descriptors are kept so that STATE_IMPORT can take its memfd; any
    // other message that carries one ends the connection (handle).
    auto m = recv_message(fd_.get(), proto::MAX_CLIENT_MESSAGE, true);
    if (!m) {
      why = m.error().end == RecvEnd::closed ? std::string("closed by the client") : m.error().what;
      break;
    }
    if (!handle(*m, why)) break;
  }
  const std::string who = name_.empty() ? strfmt("unattached client (pid %d)", static_cast<int>(peer_.pid))
                                        : "vm " + name_;
  // What the VM had: its GPU time over the time it was attached.
  std::string used;
  if (vgpu_) {
    const auto attached = std::chrono::steady_clock::now() - attached_at_;
    used = strfmt(", GPU time %.1f ms in %.1f s attached",
                  static_cast<double>(daemon_.host().gpu_ns(vgpu_->id())) / 1e6,
                  std::chrono::duration<double>(attached).count());
  }
  daemon_.log(strfmt("%s disconnected: %s (pid %d uid %u%s)", who.c_str(), why.c_str(), static_cast<int>(peer_.pid),
                     static_cast<unsigned>(peer_.uid), used.c_str()));
  teardown();
  done_.store(true, std::memory_order_release);
  daemon_.session_ended();
}

bool Session::handle(const Message& m, std::string& why) {
  if (Status s = proto::check_header(m.header); !s) {
    why = "malformed message: " + s.error().message;
    return false;
  }
  if (last_id_ && m.header.id != static_cast<uint16_t>(*last_id_ + 1)) {
    why = strfmt("message out of order: id %u after %u", m.header.id, *last_id_);
    return false;
  }
  last_id_ = m.header.id;
  if (m.fds.size() > proto::fds_allowed(m.header.command)) {
    why = strfmt("malformed message: command %u came with %zu descriptors", m.header.command, m.fds.size());
    return false;
  }
  if (migrated_) return after_migration(m, why);
  const auto cmd = static_cast<proto::Command>(m.header.command);
  if ((cmd == proto::Command::attach) == (vgpu_ != nullptr)) {
    why = strfmt("message out of order: command %u %s ATTACH", m.header.command, vgpu_ ? "after" : "before");
    return false;
  }
  switch (cmd) {
    case proto::Command::attach: return attach(m, why);
    case proto::Command::region_read: return access(m, false, why);
    case proto::Command::region_write: return access(m, true, why);
    case proto::Command::reset: return reset(m, why);
    case proto::Command::freeze:
    case proto::Command::thaw:
    case proto::Command::dirty_log:
    case proto::Command::dirty_take:
    case proto::Command::state_export:
    case proto::Command::state_import:
    case proto::Command::migrated: return migration(m, why);
    case proto::Command::layout: break;
  }
  why = "unexpected command";
  return false;
}

bool Session::attach(const Message& m, std::string& why) {
  const uint16_t id = m.header.id;
  auto refuse = [&](proto::Refusal r, const std::string& reason) {
    why = strfmt("attach refused (%s): %s", proto::refusal_name(r), reason.c_str());
    (void)send(proto::refusal(id, proto::Command::attach, r, reason), why);
    return false;
  };
  auto req = proto::parse_attach(m.payload);
  if (!req) return refuse(proto::Refusal::bad_option, req.error().message);
  const std::string name = *proto::parse_name(req->name);
  const mediator::VgpuConfig c = config_of(*req, name, daemon_);
  if (Status s = mediator::check_vgpu_config(c); !s) return refuse(proto::Refusal::bad_option, s.error().message);
  const bool incoming = req->options & proto::OPT_INCOMING;
  if (auto a = daemon_.admit(name, incoming); !a) return refuse(a.error().first, a.error().second);
  {
    const mediator::HostConfig& hc = daemon_.host().config();
    const uint64_t free = hc.vram_bytes - hc.reserved_bytes - daemon_.host().partitions_used();
    if (c.vram_bytes > free) {
      daemon_.release(name);
      return refuse(proto::Refusal::vram_exhausted, strfmt("%llu MiB asked, %llu MiB free on the daemon",
                                                           static_cast<unsigned long long>(c.vram_bytes / MiB),
                                                           static_cast<unsigned long long>(free / MiB)));
    }
  }

  auto v = daemon_.host().create_vgpu(c);
  if (!v) {
    daemon_.release(name);
    return refuse(refusal_for(v.error()), v.error().message);
  }
  // The interrupt: an eventfd and a shared status page.
  auto irq = std::make_shared<IrqSink>();
  irq->eventfd = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  irq->status_fd = UniqueFd(memfd_create("vgpud-irq-status", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  void* page = MAP_FAILED;
  if (irq->eventfd && irq->status_fd && ftruncate(irq->status_fd.get(), proto::IRQ_STATUS_BYTES) == 0 &&
      fcntl(irq->status_fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    page = mmap(nullptr, proto::IRQ_STATUS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, irq->status_fd.get(), 0);
  if (page == MAP_FAILED) {
    const std::string e = std::strerror(errno);
    daemon_.host().destroy_vgpu(*v);
    daemon_.release(name);
    return refuse(proto::Refusal::internal, "interrupt eventfd or status page: " + e);
  }
  irq->status = static_cast<proto::IrqStatus*>(page);
  {
    std::lock_guard lock(mutex_);
    name_ = name;
    vgpu_ = *v;
    weight_ = c.weight;
    irq_ = irq;
    incoming_ = incoming;
  }
  attached_at_ = std::chrono::steady_clock::now();
  bar_sizes_[proto::REGION_BAR0] = regs::pci::BAR0_SIZE;
  bar_sizes_[proto::REGION_BAR1] = vgpu_->bar_size(gpu::Bar::bar1);
  bar_sizes_[proto::REGION_BAR3] = vgpu_->bar_size(gpu::Bar::bar3);
  vgpu_->set_interrupt_handler([irq](bool level) { irq->deliver(level); });
  vgpu_->set_message_handler([irq](regs::pci::MsiVector vector) { irq->message(vector); });

  const proto::AttachReply reply{vgpu_->id(), proto::scheduler_code(daemon_.host().scheduler_name()), c.vram_bytes,
                                 bar_sizes_[proto::REGION_BAR1], bar_sizes_[proto::REGION_BAR3]};
  const int fds[proto::ATTACH_FDS] = {vgpu_->vram_fd(), irq->eventfd.get(), irq->status_fd.get()};
  const auto msg = proto::attach_reply(id, reply);
  daemon_.log(strfmt("vm %s connected: pid %d uid %u, VRAM %llu MiB, %u channels, weight %u%s%s%s%s", name.c_str(),
                     static_cast<int>(peer_.pid), static_cast<unsigned>(peer_.uid),
                     static_cast<unsigned long long>(c.vram_bytes / MiB), c.channels, c.weight,
                     c.bar_remap ? ", bar-remap" : "", c.lazy_shadow ? ", lazy-shadow" : "", c.pv ? ", pv" : "",
                     incoming ? ", incoming (a migration's destination)" : ""));
  return send(msg, why, fds) && send_layout_if_changed(why);
}

bool Session::access(const Message& m, bool write, std::string& why) {
  auto a = proto::parse_access(m.payload, write, bar_sizes_);
  if (!a) {
    why = "malformed message: " + a.error().message;
    return false;
  }
  if (write) {
    const uint64_t before = vgpu_->layout_generation();
    if (a->region == proto::REGION_BAR0)
      vgpu_->write32(static_cast<uint32_t>(a->offset), a->value);
    else
      vgpu_->bar_write32(to_gpu(a->region), a->offset, a->value);
    // A posted write the protocol says cannot move the layout, did: the
    // client may access a stale direct mapping. A bug of ours, not the
    // guest's: say so (write_is_posted must learn the register).
    if (vgpu_->layout_generation() != before && proto::write_is_posted(a->region, a->offset))
      daemon_.log(strfmt("internal error: vm %s: a posted write to region %u offset %s moved the BAR layout",
                         name_.c_str(), a->region, hex(a->offset).c_str()));
    if (!send_layout_if_changed(why)) return false;
    if (m.header.flags & proto::FLAG_NO_REPLY) return true;
    const proto::RegionAccess done{a->offset, a->region, proto::ACCESS_BYTES};
    return send(proto::message(proto::Header{.id = m.header.id,
                                             .command = static_cast<uint16_t>(proto::Command::region_write),
                                             .flags = proto::TYPE_REPLY},
                               proto::bytes_of(done)),
                why);
  }
  const uint32_t value = a->region == proto::REGION_BAR0 ? vgpu_->read32(static_cast<uint32_t>(a->offset))
                                                         : vgpu_->bar_read32(to_gpu(a->region), a->offset);
  // A layout change goes out before the reply: the client's map follows
  // the mediator's by the time its read returns.
  if (!send_layout_if_changed(why)) return false;
  struct {
    proto::RegionAccess a;
    uint32_t value;
  } r{{a->offset, a->region, proto::ACCESS_BYTES}, value};
  return send(proto::message(proto::Header{.id = m.header.id,
                                           .command = static_cast<uint16_t>(proto::Command::region_read),
                                           .flags = proto::TYPE_REPLY},
                             std::as_bytes(std::span(&r, 1)).first(sizeof(proto::RegionAccess) + proto::ACCESS_BYTES)),
              why);
}

bool Session::reset(const Message& m, std::string& why) {
  if (!m.payload.empty()) {
    why = "malformed message: a reset has no payload";
    return false;
  }
  vgpu_->write32(regs::pmc::ENABLE.offset, 0);
  if (!send_layout_if_changed(why)) return false;
  return send(proto::message(proto::Header{.id = m.header.id,
                                           .command = static_cast<uint16_t>(proto::Command::reset),
                                           .flags = proto::TYPE_REPLY},
                             {}),
              why);
}

bool Session::send(std::span<const std::byte> bytes, std::string& why, std::span<const int> fds) {
  if (Status s = send_all(fd_.get(), bytes, fds); !s) {
    why = "send failed: " + s.error().message;
    return false;
  }
  return true;
}

bool Session::send_layout_if_changed(std::string& why) {
  const uint64_t gen = vgpu_->layout_generation();
  if (gen == sent_generation_) return true;
  sent_generation_ = gen;
  for (uint32_t region : {proto::REGION_BAR1, proto::REGION_BAR3}) {
    const auto ranges = layout_of(*vgpu_, to_gpu(region));
    const proto::LayoutHead head{gen, region, static_cast<uint32_t>(ranges.size())};
    if (!send(proto::layout_message(head, ranges), why)) return false;
  }
  return true;
}

void Session::teardown() {
  release_vgpu();
  std::lock_guard lock(mutex_);
  irq_.reset();
}

void Session::release_vgpu() {
  mediator::Vgpu* v = nullptr;
  std::string name;
  {
    std::lock_guard lock(mutex_);
    v = std::exchange(vgpu_, nullptr);
    name = name_;
  }
  if (!v) return;
  if (logging_) daemon_.host().gpu().vram().dirty_log().stop();
  logging_ = false;
  v->set_interrupt_handler(nullptr);
  v->set_message_handler(nullptr);
  daemon_.host().destroy_vgpu(v);
  daemon_.release(name);
}

VmStats Session::stats(mediator::Host& host, const ShareHistory& history) const {
  VmStats s;
  s.name = name_;
  s.peer = peer_;
  if (!vgpu_) return s;
  s.vm_id = vgpu_->id();
  s.vram_bytes = vgpu_->config().vram_bytes;
  s.channels = vgpu_->config().channels;
  s.weight = weight_;
  s.gpu_ns = host.gpu_ns(s.vm_id);
  s.share_1s = history.share(s.vm_id, SECOND_NS);
  s.share_10s = history.share(s.vm_id, 10 * SECOND_NS);
  s.utilization_1s = history.utilization(s.vm_id, SECOND_NS);
  s.utilization_10s = history.utilization(s.vm_id, 10 * SECOND_NS);
  struct stat st {};
  if (fstat(vgpu_->vram_fd(), &st) == 0) s.vram_touched_bytes = static_cast<uint64_t>(st.st_blocks) * STAT_BLOCK;
  s.shadow_bytes = vgpu_->shadow_pool().size();
  s.shadow_used_bytes = vgpu_->shadow_pool().used();
  s.counters = vgpu_->counters();
  s.state = state_;
  return s;
}

}  // namespace vgpu::vgpud
