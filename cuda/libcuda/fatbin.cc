// SPDX-License-Identifier: GPL-2.0-or-later
#include "cuda/libcuda/fatbin.h"

#include <zstd.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace vgpu::cuda::fatbin {
namespace {

std::unexpected<Error> invalid(std::string why) {
  return std::unexpected(Error{CUDA_ERROR_INVALID_IMAGE, "fat binary: " + std::move(why)});
}

std::string num(uint64_t v) { return std::to_string(v); }

// The bytes [at, at + size) of b, when they lie inside it.
std::optional<std::span<const std::byte>> range(std::span<const std::byte> b, uint64_t at, uint64_t size) {
  if (at > b.size() || size > b.size() - at) return std::nullopt;
  return b.subspan(static_cast<size_t>(at), static_cast<size_t>(size));
}

// The options an entry's header points to (entry::OPTIONS), inside the header.
std::expected<std::span<const std::byte>, Error> options_of(std::span<const std::byte> header) {
  const uint64_t at = get(header, entry::OPTIONS);
  if (at == 0) return std::span<const std::byte>{};
  auto pair = range(header, at, entry::OPTIONS_SIZE.at + entry::OPTIONS_SIZE.bytes);
  if (!pair) return invalid("an entry's options field (" + num(at) + ") points outside its header");
  auto bytes = range(header, get(*pair, entry::OPTIONS_OFFSET), get(*pair, entry::OPTIONS_SIZE));
  if (!bytes) return invalid("an entry's options lie outside its header");
  return *bytes;
}

std::expected<std::span<const std::byte>, Error> name_of(std::span<const std::byte> header) {
  const uint64_t at = get(header, entry::NAME_OFFSET), size = get(header, entry::NAME_SIZE);
  if (at == 0 && size == 0) return std::span<const std::byte>{};
  auto bytes = range(header, at, size);
  if (!bytes) return invalid("an entry's source name lies outside its header");
  return *bytes;
}

// The fixed fields of the header at the start of `rest` (the container's
// bytes from this entry to its end), checked against `rest`.
std::expected<Entry, Error> read_header(std::span<const std::byte> rest, uint64_t offset) {
  if (rest.size() < entry::BASE_BYTES)
    return invalid("truncated: " + num(rest.size()) + " bytes at offset " + num(offset) + " are too few for an entry");
  Entry e;
  e.offset = offset;
  e.kind = static_cast<uint16_t>(get(rest, entry::KIND));
  e.version = static_cast<uint16_t>(get(rest, entry::VERSION));
  e.header_bytes = static_cast<uint32_t>(get(rest, entry::HEADER_SIZE));
  e.payload_bytes = get(rest, entry::PAYLOAD_SIZE);
  e.compressed_bytes = static_cast<uint32_t>(get(rest, entry::COMPRESSED_SIZE));
  e.code_major = static_cast<uint16_t>(get(rest, entry::CODE_MAJOR));
  e.code_minor = static_cast<uint16_t>(get(rest, entry::CODE_MINOR));
  e.arch = static_cast<uint32_t>(get(rest, entry::ARCH));
  e.flags = get(rest, entry::FLAGS);
  e.uncompressed_bytes = get(rest, entry::UNCOMPRESSED_SIZE);
  const std::string at = " (entry at offset " + num(offset) + ")";
  if (e.header_bytes < entry::BASE_BYTES || e.header_bytes > entry::MAX_HEADER_BYTES)
    return invalid("an entry's header size " + num(e.header_bytes) + " is outside 64.." + num(entry::MAX_HEADER_BYTES) +
                   at);
  if (e.header_bytes > rest.size()) return invalid("truncated: an entry's header runs past the end" + at);
  return e;
}

// The entry at the start of `rest`: its header, options, name and payload.
std::expected<Entry, Error> parse_entry(std::span<const std::byte> rest, uint64_t offset) {
  auto e = read_header(rest, offset);
  if (!e) return e;
  const std::string at = " (entry at offset " + num(offset) + ")";
  const auto header = rest.first(e->header_bytes);
  auto payload = range(rest, e->header_bytes, e->payload_bytes);
  if (!payload)
    return invalid("truncated: a payload of " + num(e->payload_bytes) + " bytes runs past the container's end" + at);
  const bool lz4 = (e->flags & FLAG_LZ4) != 0, zstd = (e->flags & FLAG_ZSTD) != 0;
  if (lz4 && zstd) return invalid("an entry is flagged both LZ4 and zstd" + at);
  e->compression = lz4 ? Compression::lz4 : zstd ? Compression::zstd : Compression::none;
  e->payload = *payload;
  if (e->compression != Compression::none) {
    if (e->compressed_bytes == 0 || e->compressed_bytes > e->payload_bytes)
      return invalid("a compressed size of " + num(e->compressed_bytes) + " in a payload of " + num(e->payload_bytes) +
                     " bytes" + at);
    e->payload = payload->first(e->compressed_bytes);
  }
  auto options = options_of(header);
  if (!options) return std::unexpected(options.error());
  e->options = *options;
  auto name = name_of(header);
  if (!name) return std::unexpected(name.error());
  e->name = *name;
  return e;
}

// Whether the target reads e's PTX ISA version (choose_ptx's rule).
bool reads(const Target& t, const Entry& e) {
  return e.code_major < t.ptx_major || (e.code_major == t.ptx_major && e.code_minor <= t.ptx_minor);
}

bool better(const Entry& a, const Entry& b, const Target& t) {  // is a better than b
  const bool a_fits = a.arch <= t.arch, b_fits = b.arch <= t.arch;
  if (a_fits != b_fits) return a_fits;
  if (a.arch != b.arch) return a_fits ? a.arch > b.arch : a.arch < b.arch;
  if (a.code_major != b.code_major) return a.code_major > b.code_major;
  return a.code_minor > b.code_minor;
}

Error no_ptx(const Container& c) {
  std::string archs;
  uint32_t sm = 75;  // nvcc 13's lowest target
  for (const Entry& e : c.entries) {
    archs += (archs.empty() ? "" : ", ") + e.arch_name();
    if (e.is_elf() && e.arch != 0) sm = e.arch;
  }
  const std::string s = num(sm);
  return {CUDA_ERROR_NO_BINARY_FOR_GPU,
          "the fat binary has no PTX" + (archs.empty() ? std::string(" (no entries)") : ", only " + archs) +
              ": vgpu's device runs PTX, not SASS; build it with PTX in it: nvcc -arch=sm_" + s +
              " (SASS and PTX), or add -gencode arch=compute_" + s + ",code=compute_" + s};
}

// LZ4's length: the token's 4 bits, then while they are 15, bytes added
// until one is not 255. Nullopt past the input's end.
std::optional<uint64_t> lz4_length(std::span<const std::byte> in, size_t& i, uint64_t nibble) {
  uint64_t n = nibble;
  if (nibble != 15) return n;
  for (;;) {
    if (i >= in.size()) return std::nullopt;
    const auto b = std::to_integer<uint8_t>(in[i++]);
    n += b;
    if (b != 255) return n;
  }
}

}  // namespace

uint64_t get(std::span<const std::byte> bytes, Field f) {
  if (f.bytes > 8 || f.at > bytes.size() || f.bytes > bytes.size() - f.at) return 0;
  uint64_t v = 0;
  for (uint32_t i = 0; i < f.bytes; ++i) v |= uint64_t{std::to_integer<uint8_t>(bytes[f.at + i])} << (8 * i);
  return v;
}

std::string Entry::arch_name() const { return (is_ptx() ? "compute_" : "sm_") + num(arch); }

std::expected<uint64_t, Error> container_size(std::span<const std::byte> header, uint64_t max_bytes) {
  if (header.size() < container::HEADER_BYTES)
    return invalid("truncated: " + num(header.size()) + " bytes are too few for its header");
  if (get(header, container::MAGIC_FIELD) != MAGIC) return invalid("the magic is not 0xBA55ED50");
  const uint64_t version = get(header, container::VERSION);
  if (version != CONTAINER_VERSION) return invalid("version " + num(version) + " (vgpu reads version 1)");
  const uint64_t head = get(header, container::HEADER_SIZE), body = get(header, container::BODY_SIZE);
  if (head < container::HEADER_BYTES) return invalid("a header size of " + num(head));
  if (head > max_bytes || body > max_bytes - head)
    return invalid("it declares " + num(head) + " + " + num(body) + " bytes; at most " + num(max_bytes) + " here");
  return head + body;
}

std::expected<Container, Error> parse(std::span<const std::byte> bytes) {
  auto size = container_size(bytes, bytes.size());
  if (!size) return std::unexpected(size.error());
  Container c;
  c.version = static_cast<uint16_t>(get(bytes, container::VERSION));
  c.header_bytes = static_cast<uint16_t>(get(bytes, container::HEADER_SIZE));
  c.body_bytes = get(bytes, container::BODY_SIZE);
  const auto body = bytes.subspan(c.header_bytes, static_cast<size_t>(c.body_bytes));
  for (uint64_t at = 0; at < body.size();) {
    auto e = parse_entry(body.subspan(static_cast<size_t>(at)), c.header_bytes + at);
    if (!e) return std::unexpected(e.error());
    at += e->header_bytes + e->payload_bytes;  // both checked inside body
    c.entries.push_back(*e);
  }
  return c;
}

std::expected<std::vector<std::byte>, Error> unpack(const Entry& e, uint64_t max_bytes) {
  const uint64_t size = e.compression == Compression::none ? e.payload.size() : e.uncompressed_bytes;
  if (size > max_bytes)
    return std::unexpected(Error{e.is_ptx() ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE,
                                 "fat binary: the " + e.arch_name() + " entry is " + num(size) +
                                     " bytes, more than the " + num(max_bytes) + " vgpu takes"});
  switch (e.compression) {
    case Compression::none: return std::vector<std::byte>(e.payload.begin(), e.payload.end());
    case Compression::lz4: return lz4_decode(e.payload, size);
    case Compression::zstd: break;
  }
  std::vector<std::byte> out(static_cast<size_t>(size));
  const size_t got = ZSTD_decompress(out.data(), out.size(), e.payload.data(), e.payload.size());
  if (ZSTD_isError(got)) return invalid("the " + e.arch_name() + " entry's zstd data: " + ZSTD_getErrorName(got));
  if (got != size)
    return invalid("the " + e.arch_name() + " entry's zstd data gives " + num(got) + " bytes, not " + num(size));
  return out;
}

std::expected<std::vector<std::byte>, Error> lz4_decode(std::span<const std::byte> in, uint64_t size) {
  std::vector<std::byte> out;
  out.reserve(static_cast<size_t>(size));
  const auto bad = [&](const char* why) { return invalid(std::string("LZ4 data: ") + why); };
  for (size_t i = 0; i < in.size();) {
    const auto token = std::to_integer<uint8_t>(in[i++]);
    auto literals = lz4_length(in, i, token >> 4);
    if (!literals || *literals > in.size() - i) return bad("literals run past the input");
    if (*literals > size - out.size()) return bad("more bytes than the entry declares");
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(i),
               in.begin() + static_cast<std::ptrdiff_t>(i + *literals));
    i += static_cast<size_t>(*literals);
    if (i == in.size()) break;  // the last sequence: literals only
    if (in.size() - i < 2) return bad("a match offset runs past the input");
    const size_t offset = std::to_integer<size_t>(in[i]) | std::to_integer<size_t>(in[i + 1]) << 8;
    i += 2;
    if (offset == 0 || offset > out.size()) return bad("a match offset points before the start");
    auto match = lz4_length(in, i, token & 15u);
    if (!match) return bad("a match length runs past the input");
    if (*match + 4 > size - out.size()) return bad("more bytes than the entry declares");
    for (uint64_t k = 0; k < *match + 4; ++k) {
      const std::byte b = out[out.size() - offset];  // may be one this loop wrote
      out.push_back(b);
    }
  }
  if (out.size() != size) return bad("fewer bytes than the entry declares");
  return out;
}

std::expected<size_t, Error> choose_ptx(const Container& c, const Target& t) {
  bool any_read = false;
  for (const Entry& e : c.entries) any_read = any_read || (e.is_ptx() && reads(t, e));
  std::optional<size_t> best;
  for (size_t i = 0; i < c.entries.size(); ++i) {
    const Entry& e = c.entries[i];
    if (!e.is_ptx() || (any_read && !reads(t, e))) continue;
    if (!best || better(e, c.entries[*best], t)) best = i;
  }
  if (!best) return std::unexpected(no_ptx(c));
  return *best;
}

std::expected<std::string, Error> extract_ptx(std::span<const std::byte> bytes, const Target& t,
                                              uint64_t max_text_bytes) {
  auto c = parse(bytes);
  if (!c) return std::unexpected(c.error());
  auto i = choose_ptx(*c, t);
  if (!i) return std::unexpected(i.error());
  auto payload = unpack(c->entries[*i], max_text_bytes + 1);  // + its NUL
  if (!payload) return std::unexpected(payload.error());
  auto end = std::find(payload->begin(), payload->end(), std::byte{0});
  std::string text(reinterpret_cast<const char*>(payload->data()), static_cast<size_t>(end - payload->begin()));
  if (text.size() > max_text_bytes)
    return std::unexpected(
        Error{CUDA_ERROR_INVALID_PTX, "the PTX text is longer than " + num(max_text_bytes) + " bytes"});
  return text;
}

}  // namespace vgpu::cuda::fatbin
