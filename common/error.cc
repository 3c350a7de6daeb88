// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/error.h"

namespace vgpu {

const char* errc_name(Errc c) {
  switch (c) {
    case Errc::invalid_argument: return "invalid argument";
    case Errc::out_of_memory: return "out of memory";
    case Errc::not_found: return "not found";
    case Errc::device_error: return "device error";
    case Errc::timeout: return "timeout";
    case Errc::unsupported: return "unsupported";
    case Errc::io_error: return "I/O error";
  }
  return "unknown error";
}

}  // namespace vgpu
