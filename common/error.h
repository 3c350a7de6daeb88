// SPDX-License-Identifier: GPL-2.0-or-later
// Errors: a small closed set of codes, returned as std::expected and
// wrapped with context on the way up. A message names the object it
// concerns (VM, channel, address).
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace vgpu {

enum class Errc {
  invalid_argument,  // a caller passed a value out of range
  out_of_memory,     // VRAM or another bounded resource is exhausted
  not_found,         // no such object (handle, device, file)
  device_error,      // the device reported an error (fault, channel error)
  timeout,           // a wait did not complete in time
  unsupported,       // the request names a feature vgpu does not have
  io_error,          // the host refused a system call
};

const char* errc_name(Errc c);

struct Error {
  Errc code;
  std::string message;

  // Prefix context: Error{...}.context("vm 2") -> "vm 2: <message>".
  Error context(const std::string& what) const& { return Error{code, what + ": " + message}; }
  std::string what() const { return std::string(errc_name(code)) + ": " + message; }
};

template <typename T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

}  // namespace vgpu
