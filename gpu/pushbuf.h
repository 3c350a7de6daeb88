// SPDX-License-Identifier: GPL-2.0-or-later
// Push-buffer method headers (fmt::mthd): decoding a header word into a
// command, one table row per opcode.
#pragma once

#include <cstdint>

#include "vgpu/formats.h"

namespace vgpu::gpu::pushbuf {

enum class Kind : uint8_t {
  nop,          // the zero word, or a legacy subdevice-mask header: no data
  inc,          // data word i goes to method + 4 i
  non_inc,      // every data word goes to method
  one_inc,      // the first word to method, the rest to method + 4
  immediate,    // one method, data in the header
  end_segment,  // ends the push-buffer segment
  illegal,      // reserved opcode or malformed header: ILLEGAL_CMD
};

struct Command {
  Kind kind;
  uint32_t subch = 0;
  uint32_t method = 0;     // byte address
  uint32_t count = 0;      // data words following the header
  uint32_t immediate = 0;  // data of an immediate command
};

Command decode(uint32_t header);

// The method that data word i of a command goes to.
uint32_t method_of(const Command& c, uint32_t i);
// Number of methods the command executes.
inline uint32_t methods(const Command& c) { return c.kind == Kind::immediate ? 1 : c.count; }

}  // namespace vgpu::gpu::pushbuf
