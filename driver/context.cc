// SPDX-License-Identifier: GPL-2.0-or-later
// Contexts: address space, channel, buffers, transfers, fences.
#include <array>
#include <cstring>

#include "common/launch_trace.h"
#include "driver/bar_io.h"
#include "driver/copy_engine.h"
#include <algorithm>

#include "driver/msg.h"
#include "driver/runtime.h"

namespace vgpu::driver {

namespace {
// User VAs start above the first PDE so that small addresses fault.
constexpr uint64_t USER_VA_BASE = fmt::PDE_SPAN;
constexpr uint64_t CONSTS_BYTES = fmt::SMALL_PAGE;
constexpr uint64_t ARG_CB_OFFSET = 0x100;  // after the program descriptors
static_assert(CODE_BYTES <= ARG_CB_OFFSET && ARG_CB_OFFSET + ARG_CB_BYTES <= CONSTS_BYTES);
static_assert(ARG_CB_OFFSET + ARG_CB_BYTES <= USER_PROGRAM_OFFSET &&
              USER_PROGRAM_OFFSET + sizeof(cls::ProgramDescriptor) <= CONSTS_BYTES);

// `bytes` at `offset` lie inside a buffer of `size` bytes (without overflow).
bool fits(uint64_t offset, uint64_t bytes, uint64_t size) { return offset <= size && bytes <= size - offset; }
}  // namespace

Status Context::setup() {
  Device& d = dev_;
  auto vmm = d.make_tables("context VMM", fmt::VA_LIMIT, SpaceKind::channel);
  if (!vmm) return std::unexpected(vmm.error());
  as_ = std::make_unique<AddressSpace>(d.port_, std::move(*vmm), USER_VA_BASE, fmt::VA_LIMIT - USER_VA_BASE);
  if (auto ok = as_->reserve(COMPUTE_APERTURE_BASE, COMPUTE_APERTURE_END - COMPUTE_APERTURE_BASE); !ok)
    return std::unexpected(ok.error().context("compute aperture"));
  compute_ = std::make_unique<ComputeHeap>(*as_, *d.vram_);
  auto ch = Channel::create(d.deps(), *as_, d.options_.channel);
  if (!ch) return std::unexpected(ch.error());
  channel_ = std::move(*ch);

  auto fva = as_->map(d.fence_mem_, fmt::SMALL_PAGE);
  if (!fva) return std::unexpected(fva.error().context("fence buffer"));
  fence_va_ = *fva;
  const uint64_t slot = uint64_t{channel_->chid()} * cls::host::SEM_RELEASE_16_BYTES;
  fence_ = std::make_unique<FenceSlot>(d.port_, *channel_, fence_va_ + slot, d.fence_bar1_ + slot,
                                       d.options_.wait_spin_ns);
  d.port_.write32(Bar::bar1, d.fence_bar1_ + slot, 0);

  // Program descriptors and the argument constant buffer.
  if (auto ok = setup_buffer(CONSTS_BYTES, "code buffer", consts_mem_, consts_va_); !ok) return ok;
  for (cls::Kernel k : KERNELS) {
    const cls::ProgramDescriptor pd = program_descriptor(k);
    const uint32_t words[4] = {pd.magic, pd.version, pd.kernel, pd.entry};
    for (uint32_t i = 0; i < 4; ++i) d.mem_.write32(consts_mem_ + program_offset(k) + 4 * i, words[i]);
  }

  // Staging buffer: BAR1 for the CPU, this address space for the copy engine.
  const uint64_t staging = align_up(std::max<uint64_t>(d.options_.staging_bytes, fmt::SMALL_PAGE), fmt::SMALL_PAGE);
  if (auto ok = setup_buffer(staging, "staging buffer", staging_mem_, staging_va_); !ok) return ok;
  auto sbar = d.bars_->bar1().map(staging_mem_, staging);
  if (!sbar) return std::unexpected(sbar.error().context("staging buffer"));
  staging_bar1_ = *sbar;

  PushBuffer pb;
  emit_copy_bind(pb);
  emit_compute_bind(pb, consts_va_);
  auto f = submit(pb);
  if (!f) return std::unexpected(f.error());
  return wait(*f);
}

Context::~Context() {
  for (auto& [id, rec] : buffers_) {
    if (rec.bar1) (void)dev_.bars_->bar1().unmap(rec.bar1);
    if (rec.compute) continue;  // compute_ unmaps and frees its blocks
    (void)as_->unmap(rec.va);
    if (!rec.host.empty())
      dev_.port_.unpin(rec.host);
    else
      (void)dev_.vram_->free(rec.vram);
  }
  if (staging_bar1_) (void)dev_.bars_->bar1().unmap(staging_bar1_);
  fence_.reset();
  channel_.reset();  // off the runlist before its memory goes
  compute_.reset();
  as_.reset();
  for (uint64_t m : {consts_mem_, staging_mem_})
    if (m) (void)dev_.vram_->free(m);
}

Status Context::setup_buffer(uint64_t bytes, const char* what, uint64_t& mem, uint64_t& va) {
  auto m = dev_.vram_->alloc(bytes, fmt::SMALL_PAGE);
  if (!m) return std::unexpected(m.error().context(what));
  mem = *m;
  auto v = as_->map(mem, bytes);
  if (!v) return std::unexpected(v.error());
  va = *v;
  return {};
}

// ---------------------------------------------------------------- buffers

Result<Buffer> Context::alloc(uint64_t bytes) {
  if (bytes == 0) return fail(Errc::invalid_argument, "buffer of 0 bytes");
  // Big pages for buffers of at least one big page: fewer PTEs.
  const bool big = bytes >= fmt::BIG_PAGE;
  const uint64_t page = big ? fmt::BIG_PAGE : fmt::SMALL_PAGE;
  const uint64_t rounded = align_up(bytes, page);
  auto mem = dev_.vram_->alloc(rounded, page);
  if (!mem) return std::unexpected(mem.error().context(msg("buffer of {} bytes", bytes)));
  auto va = as_->map(*mem, rounded);
  if (!va) {
    (void)dev_.vram_->free(*mem);
    return std::unexpected(va.error().context(msg("buffer of {} bytes", bytes)));
  }
  const uint32_t id = next_id_++;
  buffers_.emplace(id, BufferRec{*mem, bytes, *va});
  return Buffer{id};
}

Result<Buffer> Context::alloc_compute(uint64_t bytes) {
  auto r = compute_->alloc(bytes);
  if (!r) return std::unexpected(r.error());
  const uint32_t id = next_id_++;
  buffers_.emplace(id, BufferRec{.vram = r->vram, .bytes = bytes, .va = r->va, .compute = true});
  return Buffer{id};
}

Result<const Context::BufferRec*> Context::find(Buffer b, const char* role) const {
  if (b.id == 0 || b.id >= next_id_)
    return fail(Errc::invalid_argument, msg("{}: buffer {} is not a handle of context {}", role, b.id, channel_id()));
  auto it = buffers_.find(b.id);
  if (it == buffers_.end()) return fail(Errc::not_found, msg("{}: buffer {} was freed", role, b.id));
  return &it->second;
}

Status Context::free(Buffer b) {
  auto rec = find(b, "free");
  if (!rec) return std::unexpected(rec.error());
  // The GPU may still use it: wait for submitted work first.
  if (auto ok = synchronize(); !ok && ok.error().code != Errc::device_error) return ok;
  BufferRec r = **rec;
  buffers_.erase(b.id);
  if (r.bar1) (void)dev_.bars_->bar1().unmap(r.bar1);
  if (r.compute) return compute_->free(r.va);
  if (auto ok = as_->unmap(r.va); !ok) return ok;
  if (!r.host.empty()) {
    dev_.port_.unpin(r.host);
    return {};
  }
  return dev_.vram_->free(r.vram);
}

Result<Buffer> Context::alloc_host(uint64_t bytes) {
  if (bytes == 0) return fail(Errc::invalid_argument, "pinned buffer of 0 bytes");
  const uint32_t id = next_id_;
  const auto what = [&] { return msg("pinned buffer {} of {} bytes", id, bytes); };
  auto pages = dev_.port_.pin(bytes);
  if (!pages) return std::unexpected(pages.error().context(what()));
  auto va = as_->map_pages(pages->bus, fmt::pte::Flags{.aperture = fmt::Target::sysmem_noncoherent});
  if (!va) {
    dev_.port_.unpin(pages->host);
    return std::unexpected(va.error().context(what()));
  }
  ++next_id_;
  buffers_.emplace(id, BufferRec{0, bytes, *va, 0, pages->host});
  return Buffer{id};
}

Result<std::span<std::byte>> Context::host_data(Buffer pinned) const {
  auto rec = find(pinned, "host_data");
  if (!rec) return std::unexpected(rec.error());
  if ((*rec)->host.empty())
    return fail(Errc::invalid_argument, msg("host_data: buffer {} is VRAM, not pinned host memory", pinned.id));
  return (*rec)->host.first((*rec)->bytes);
}

bool Context::is_pinned(Buffer b) const {
  auto it = buffers_.find(b.id);
  return it != buffers_.end() && !it->second.host.empty();
}

std::optional<std::pair<Buffer, uint64_t>> Context::pinned_holding(const std::byte* p, uint64_t bytes) const {
  for (const auto& [id, rec] : buffers_) {
    if (rec.host.empty() || p < rec.host.data()) continue;
    const auto off = static_cast<uint64_t>(p - rec.host.data());
    if (off <= rec.bytes && bytes <= rec.bytes - off) return std::pair{Buffer{id}, off};
  }
  return std::nullopt;
}

Status Context::pinned_copy(uint64_t dst_va, uint64_t src_va, uint64_t bytes) {
  PushBuffer pb;
  emit_copy(pb, dst_va, src_va, bytes);
  auto f = submit(pb);
  if (!f) return std::unexpected(f.error());
  if (auto ok = wait(*f); !ok) return ok;
  stats_.pinned_bytes += bytes;
  return {};
}

Status Context::upload_pinned(Buffer dst, uint64_t offset, Buffer pinned, uint64_t pinned_off, uint64_t bytes) {
  return pinned_transfer(PinnedWay::upload, pinned, pinned_off, dst, offset, bytes);
}

Status Context::download_pinned(Buffer pinned, uint64_t pinned_off, Buffer src, uint64_t offset, uint64_t bytes) {
  return pinned_transfer(PinnedWay::download, pinned, pinned_off, src, offset, bytes);
}

Status Context::pinned_transfer(PinnedWay way, Buffer pinned, uint64_t pinned_off, Buffer device, uint64_t offset,
                                uint64_t bytes) {
  const bool up = way == PinnedWay::upload;
  const std::string call = up ? "upload_pinned" : "download_pinned";
  const char* pinned_role = up ? "source" : "destination";
  const char* device_role = up ? "destination" : "source";
  auto p = find(pinned, (call + " " + pinned_role).c_str());
  if (!p) return std::unexpected(p.error());
  if ((*p)->host.empty())
    return fail(Errc::invalid_argument,
                msg("{}: {} buffer {} is not pinned host memory", call, pinned_role, pinned.id));
  auto d = find(device, (call + " " + device_role).c_str());
  if (!d) return std::unexpected(d.error());
  if (!fits(offset, bytes, (*d)->bytes) || !fits(pinned_off, bytes, (*p)->bytes)) {
    const std::string in_pinned = msg("pinned buffer {}+{}", pinned.id, pinned_off);
    const std::string in_device = msg("buffer {}+{}", device.id, offset);
    return fail(Errc::invalid_argument, msg("{}: {} bytes from {} to {} out of range", call, bytes,
                                            up ? in_pinned : in_device, up ? in_device : in_pinned));
  }
  if (bytes == 0) return {};
  const uint64_t pinned_va = (*p)->va + pinned_off, device_va = (*d)->va + offset;
  return up ? pinned_copy(device_va, pinned_va, bytes) : pinned_copy(pinned_va, device_va, bytes);
}

Result<uint64_t> Context::gpu_va(Buffer b) const {
  auto rec = find(b, "gpu_va");
  if (!rec) return std::unexpected(rec.error());
  return (*rec)->va;
}

Result<uint64_t> Context::size(Buffer b) const {
  auto rec = find(b, "size");
  if (!rec) return std::unexpected(rec.error());
  return (*rec)->bytes;
}

Result<uint64_t> Context::va_checked(Buffer b, uint64_t bytes, const char* role) const {
  auto rec = find(b, role);
  if (!rec) return std::unexpected(rec.error());
  if (bytes > (*rec)->bytes)
    return fail(Errc::invalid_argument,
                msg("{}: buffer {} has {} bytes, the kernel touches {}", role, b.id, (*rec)->bytes, bytes));
  return (*rec)->va;
}

// ---------------------------------------------------------------- submission and fences

Status Context::status() {
  if (error_) return std::unexpected(*error_);
  if (auto code = channel_->error_if_signalled(); code != regs::ChannelError::none) {
    error_ = channel_->error_status(code);
    return std::unexpected(*error_);
  }
  return {};
}

Result<Fence> Context::submit(PushBuffer& pb) {
  if (auto ok = status(); !ok) return std::unexpected(ok.error());
  const Fence f = fence_->emit(pb);
  if (auto ok = channel_->submit(pb.words()); !ok) {
    if (ok.error().code == Errc::device_error) error_ = ok.error();
    return std::unexpected(ok.error());
  }
  return f;
}

Status Context::wait(Fence f, uint64_t timeout_ns) {
  auto ok = fence_->wait(f, timeout_ns ? timeout_ns : dev_.options_.timeout_ns);
  if (!ok && ok.error().code == Errc::device_error) error_ = ok.error();
  return ok;
}

Status Context::synchronize(uint64_t timeout_ns) {
  if (fence_->last_emitted() == 0) return status();
  return wait(fence_->last_fence(), timeout_ns);
}

// ---------------------------------------------------------------- transfers

Status Context::direct(BufferRec& rec, uint64_t offset, std::span<const std::byte> src, std::span<std::byte> dst) {
  if (!rec.bar1) {
    auto off = dev_.bars_->bar1().map(rec.vram, align_up(rec.bytes, fmt::SMALL_PAGE));
    if (!off) return std::unexpected(off.error());
    rec.bar1 = *off;
  }
  if (!src.empty()) bar1_write(dev_.port_, rec.bar1 + offset, src);
  if (!dst.empty()) bar1_read(dev_.port_, rec.bar1 + offset, dst);
  stats_.direct_bytes += src.size() + dst.size();
  return {};
}

Status Context::staged(const BufferRec& rec, uint64_t offset, std::span<const std::byte> src,
                       std::span<std::byte> dst) {
  const uint64_t chunk = align_up(std::max<uint64_t>(dev_.options_.staging_bytes, fmt::SMALL_PAGE), fmt::SMALL_PAGE);
  const uint64_t total = src.empty() ? dst.size() : src.size();
  for (uint64_t done = 0; done < total;) {
    const uint64_t n = std::min(chunk, total - done);
    PushBuffer pb;
    if (!src.empty()) {
      bar1_write(dev_.port_, staging_bar1_, src.subspan(done, n));
      emit_copy(pb, rec.va + offset + done, staging_va_, n);
    } else {
      emit_copy(pb, staging_va_, rec.va + offset + done, n);
    }
    auto f = submit(pb);
    if (!f) return std::unexpected(f.error());
    if (auto ok = wait(*f); !ok) return ok;
    if (!dst.empty()) bar1_read(dev_.port_, staging_bar1_, dst.subspan(done, n));
    done += n;
  }
  stats_.staged_bytes += total;
  return {};
}

Status Context::transfer(const char* what, Buffer buf, uint64_t offset, std::span<const std::byte> src,
                         std::span<std::byte> dst) {
  const uint64_t bytes = src.size() + dst.size();  // one of the two is empty
  auto rec = find(buf, what);
  if (!rec) return std::unexpected(rec.error());
  if (!fits(offset, bytes, (*rec)->bytes))
    return fail(Errc::invalid_argument, msg("{}: {} bytes at offset {} overrun buffer {} of {} bytes", what, bytes,
                                            offset, buf.id, (*rec)->bytes));
  if (bytes == 0) return {};
  if (auto ok = synchronize(); !ok) return ok;
  BufferRec& r = buffers_.at(buf.id);
  const bool to_device = !src.empty();
  if (!r.host.empty()) {  // pinned memory: the CPU writes or reads it
    if (to_device)
      std::memcpy(r.host.data() + offset, src.data(), bytes);
    else
      std::memcpy(dst.data(), r.host.data() + offset, bytes);
    return {};
  }
  if (bytes <= dev_.options_.direct_transfer_max) return direct(r, offset, src, dst);
  if (auto p = pinned_holding(to_device ? src.data() : dst.data(), bytes)) {
    const uint64_t host_va = buffers_.at(p->first.id).va + p->second;
    return to_device ? pinned_copy(r.va + offset, host_va, bytes) : pinned_copy(host_va, r.va + offset, bytes);
  }
  return staged(r, offset, src, dst);
}

Status Context::upload(Buffer dst, uint64_t offset, std::span<const std::byte> src) {
  return transfer("upload", dst, offset, src, {});
}

Status Context::download(Buffer src, uint64_t offset, std::span<std::byte> dst) {
  return transfer("download", src, offset, {}, dst);
}

Result<Fence> Context::copy(Buffer dst, uint64_t dst_off, Buffer src, uint64_t src_off, uint64_t bytes) {
  auto d = find(dst, "copy destination");
  if (!d) return std::unexpected(d.error());
  auto s = find(src, "copy source");
  if (!s) return std::unexpected(s.error());
  if (!fits(dst_off, bytes, (*d)->bytes) || !fits(src_off, bytes, (*s)->bytes))
    return fail(Errc::invalid_argument, msg("copy: {} bytes from buffer {}+{} to buffer {}+{} out of range", bytes,
                                            src.id, src_off, dst.id, dst_off));
  PushBuffer pb;
  emit_copy(pb, (*d)->va + dst_off, (*s)->va + src_off, bytes);
  return submit(pb);
}

Result<Fence> Context::copy_lines(Buffer dst, Buffer src, uint32_t line_bytes, uint32_t lines, uint32_t pitch_in,
                                  uint32_t pitch_out) {
  auto d = find(dst, "copy destination");
  if (!d) return std::unexpected(d.error());
  auto s = find(src, "copy source");
  if (!s) return std::unexpected(s.error());
  const auto extent = [&](uint32_t pitch) { return (uint64_t{lines} - 1) * pitch + line_bytes; };
  if (lines == 0 || line_bytes == 0) return fail(Errc::invalid_argument, "copy_lines: no lines or empty lines");
  if (extent(pitch_out) > (*d)->bytes || extent(pitch_in) > (*s)->bytes)
    return fail(Errc::invalid_argument, msg("copy_lines: {} lines of {} bytes (pitches {}, {}) out of range", lines,
                                            line_bytes, pitch_in, pitch_out));
  PushBuffer pb;
  emit_copy_lines(pb, {(*d)->va, (*s)->va, line_bytes, lines, pitch_in, pitch_out});
  return submit(pb);
}

// ---------------------------------------------------------------- launches

Result<Fence> Context::launch(cls::Kernel kernel, std::span<const std::byte> args, LaunchShape shape) {
  LaunchTrace::mark(LaunchPhase::api_entry);
  if (args.size() > ARG_CB_BYTES || args.size() % 4)
    return fail(Errc::invalid_argument,
                msg("kernel {}: {} argument bytes", static_cast<uint32_t>(kernel), args.size()));
  std::array<uint32_t, ARG_CB_BYTES / 4> words;
  std::memcpy(words.data(), args.data(), args.size());
  PushBuffer pb;
  emit_launch(pb, kernel, consts_va_ + ARG_CB_OFFSET, std::span(words).first(args.size() / 4), shape);
  return submit(pb);
}

}  // namespace vgpu::driver
