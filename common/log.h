// SPDX-License-Identifier: GPL-2.0-or-later
// What the device reports to the people who run it: a guest's misbehaviour
// (QEMU's LOG_GUEST_ERROR) and the device's own failures (internal errors:
// a bug or a host resource failure, never something a guest did right).
// One sink per device, rate-limited per kind, so that a guest hammering a
// bad register cannot flood the host's log.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace vgpu {

enum class LogKind : uint8_t { guest_error = 0, internal_error = 1 };
inline constexpr size_t NUM_LOG_KINDS = 2;
const char* log_kind_name(LogKind kind);

// Receives each line that passes the rate limit; must not block for long.
using LogFn = std::function<void(LogKind, const std::string&)>;

// The default sink: "vgpu: <kind>: <line>" on stderr.
void log_to_stderr(LogKind kind, const std::string& line);

class Log {
 public:
  // Lines of one kind passed on before the limit applies, and after it,
  // one line in every LOG_EVERY (with the count of those dropped).
  static constexpr uint64_t LOG_BURST = 64;
  static constexpr uint64_t LOG_EVERY = 1000;

  explicit Log(LogFn sink = nullptr);  // nullptr: log_to_stderr

  void operator()(LogKind kind, const std::string& line);
  void guest_error(const std::string& line) { (*this)(LogKind::guest_error, line); }
  void internal_error(const std::string& line) { (*this)(LogKind::internal_error, line); }

  // Lines of a kind reported, passed on or not.
  uint64_t count(LogKind kind) const { return counts_[static_cast<size_t>(kind)].load(std::memory_order_relaxed); }

 private:
  LogFn sink_;
  std::mutex mutex_;  // one line at a time reaches the sink
  std::atomic<uint64_t> counts_[NUM_LOG_KINDS] = {};
};

}  // namespace vgpu
