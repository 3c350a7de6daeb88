// SPDX-License-Identifier: GPL-2.0-or-later
// A bounds-checked little-endian byte codec for images that leave the
// process (the migration image, docs/migration.md §3). The Writer appends;
// the Reader never reads past its bytes: a read beyond the end gives 0 and
// latches a failure, which the decoder turns into a message naming the
// section and the byte where it ended (ok() and where()).
//
// A record's fixed fields are listed once, in wire order, in one function
// template that both ways call (a Writer or a Reader as `io`):
//   template <typename Config, typename Io>
//   void config_fields(Config& c, Io& io) { io.fields(c.vram_bytes, c.channels, c.pv); }
// Writer::fields writes each by its type, Reader::fields reads each back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vgpu {

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v) { put(v, sizeof v); }
  void u64(uint64_t v) { put(v, sizeof v); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void bytes(std::span<const uint8_t> b) {
    u32(static_cast<uint32_t>(b.size()));
    bytes_.insert(bytes_.end(), b.begin(), b.end());
  }
  void text(const std::string& s) { bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()}); }
  // Each value by its type: u8, u32, u64, bool, or an array of those.
  template <typename... T>
  void fields(const T&... v) {
    (field(v), ...);
  }
  void field(uint8_t v) { u8(v); }
  void field(uint32_t v) { u32(v); }
  void field(uint64_t v) { u64(v); }
  void field(bool v) { boolean(v); }
  template <typename T, size_t N>
  void field(const std::array<T, N>& a) {
    for (const T& v : a) field(v);
  }
  template <typename T>
  void field(const T&) = delete;  // a type with no wire form here
  // Overwrites a u32 written earlier at `at` (a length filled in later).
  void patch_u32(size_t at, uint32_t v) {
    for (size_t i = 0; i < sizeof v; ++i) bytes_[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& data() const { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  void put(uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : bytes_(b) {}
  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint32_t u32() { return static_cast<uint32_t>(get(sizeof(uint32_t))); }
  uint64_t u64() { return get(sizeof(uint64_t)); }
  bool boolean() { return u8() != 0; }
  // Writer::fields' counterpart: each value read back by its type, in order.
  template <typename... T>
  void fields(T&... v) {
    (field(v), ...);
  }
  void field(uint8_t& v) { v = u8(); }
  void field(uint32_t& v) { v = u32(); }
  void field(uint64_t& v) { v = u64(); }
  void field(bool& v) { v = boolean(); }
  template <typename T, size_t N>
  void field(std::array<T, N>& a) {
    for (T& v : a) field(v);
  }
  template <typename T>
  void field(T&) = delete;  // a type with no wire form here
  // A length-prefixed run of bytes, as a view into the input.
  std::span<const uint8_t> bytes() {
    const uint32_t n = u32();
    if (!ok_ || n > left()) return fail();
    std::span<const uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  std::string text() {
    std::span<const uint8_t> b = bytes();
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  // The next n bytes as a reader of their own (a section), skipped here.
  Reader sub(size_t n) {
    if (!ok_ || n > left()) {
      fail();
      return Reader({});
    }
    Reader r(bytes_.subspan(pos_, n));
    pos_ += n;
    return r;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  size_t where() const { return pos_; }
  size_t size() const { return bytes_.size(); }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  uint64_t get(size_t n) {
    if (!ok_ || n > left()) {
      fail();
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{bytes_[pos_ + i]} << (8 * i);
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> fail() {
    ok_ = false;
    return {};
  }
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace vgpu
