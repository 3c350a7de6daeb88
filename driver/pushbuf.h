// SPDX-License-Identifier: GPL-2.0-or-later
// Push-buffer builder: method headers (fmt::mthd) followed by their data
// words, in host memory, ready to be copied into a channel's push-buffer
// ring and named by one GPFIFO entry.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "vgpu/formats.h"

namespace vgpu::driver {

// Subchannel conventions of this driver (SET_OBJECT binds them per channel).
namespace subch {
inline constexpr unsigned HOST = 0;  // host methods go to any subchannel; 0 by convention
inline constexpr unsigned COMPUTE = 1;
inline constexpr unsigned COPY = 4;  // nouveau and mesa use 4 for copy
}  // namespace subch

class PushBuffer {
 public:
  // Room for a launch and its fence at once: growing word by word cost a
  // launch half a dozen allocations.
  static constexpr size_t RESERVED_WORDS = 128;
  PushBuffer() { words_.reserve(RESERVED_WORDS); }

  // Incrementing: data[i] goes to method + 4 i.
  PushBuffer& inc(unsigned sc, uint32_t method, std::span<const uint32_t> data);
  PushBuffer& inc(unsigned sc, uint32_t method, std::initializer_list<uint32_t> data) {
    return inc(sc, method, std::span<const uint32_t>(data.begin(), data.size()));
  }
  // Non-incrementing: every word goes to `method`.
  PushBuffer& non_inc(unsigned sc, uint32_t method, std::span<const uint32_t> data);
  // Increment once: the first word goes to `method`, the rest to method + 4.
  PushBuffer& one_inc(unsigned sc, uint32_t method, std::span<const uint32_t> data);
  // Immediate: data in the header when it fits (fmt::mthd::IMMEDIATE_MAX),
  // else an incrementing header with one data word.
  PushBuffer& immediate(unsigned sc, uint32_t method, uint32_t data);
  // One method, one word: immediate when it fits.
  PushBuffer& method(unsigned sc, uint32_t m, uint32_t data) { return immediate(sc, m, data); }

  std::span<const uint32_t> words() const { return words_; }
  size_t size() const { return words_.size(); }
  bool empty() const { return words_.empty(); }
  void clear() { words_.clear(); }

 private:
  PushBuffer& emit(fmt::mthd::Op op, unsigned sc, uint32_t method, std::span<const uint32_t> data);
  std::vector<uint32_t> words_;
};

}  // namespace vgpu::driver
