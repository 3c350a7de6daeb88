// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver/pushbuf.h"

#include <algorithm>

namespace vgpu::driver {

PushBuffer& PushBuffer::emit(fmt::mthd::Op op, unsigned sc, uint32_t method, std::span<const uint32_t> data) {
  // A header carries at most Count::max words; longer runs get more headers.
  size_t done = 0;
  do {
    const size_t n = std::min<size_t>(data.size() - done, fmt::mthd::Count::max);
    uint32_t m = method;
    if (done && op == fmt::mthd::Op::inc) m = method + static_cast<uint32_t>(done) * 4;
    if (done && op == fmt::mthd::Op::one_inc) m = method + 4;
    // A continued one_inc run sends every word to method + 4: non_inc there.
    const fmt::mthd::Op hop = (done && op == fmt::mthd::Op::one_inc) ? fmt::mthd::Op::non_inc : op;
    words_.push_back(fmt::mthd::header(hop, sc, m, static_cast<uint32_t>(n)));
    words_.insert(words_.end(), data.begin() + static_cast<std::ptrdiff_t>(done),
                  data.begin() + static_cast<std::ptrdiff_t>(done + n));
    done += n;
  } while (done < data.size());
  return *this;
}

PushBuffer& PushBuffer::inc(unsigned sc, uint32_t method, std::span<const uint32_t> data) {
  return emit(fmt::mthd::Op::inc, sc, method, data);
}

PushBuffer& PushBuffer::non_inc(unsigned sc, uint32_t method, std::span<const uint32_t> data) {
  return emit(fmt::mthd::Op::non_inc, sc, method, data);
}

PushBuffer& PushBuffer::one_inc(unsigned sc, uint32_t method, std::span<const uint32_t> data) {
  return emit(fmt::mthd::Op::one_inc, sc, method, data);
}

PushBuffer& PushBuffer::immediate(unsigned sc, uint32_t method, uint32_t data) {
  if (data <= fmt::mthd::IMMEDIATE_MAX) {
    words_.push_back(fmt::mthd::immediate(sc, method, data));
    return *this;
  }
  const uint32_t one[] = {data};
  return inc(sc, method, one);
}

}  // namespace vgpu::driver
