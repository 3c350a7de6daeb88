// SPDX-License-Identifier: GPL-2.0-or-later
#include "common/log.h"

#include <cstdio>

namespace vgpu {

const char* log_kind_name(LogKind kind) { return kind == LogKind::guest_error ? "guest error" : "internal error"; }

void log_to_stderr(LogKind kind, const std::string& line) {
  std::fprintf(stderr, "vgpu: %s: %s\n", log_kind_name(kind), line.c_str());
}

Log::Log(LogFn sink) : sink_(sink ? std::move(sink) : LogFn(log_to_stderr)) {}

void Log::operator()(LogKind kind, const std::string& line) {
  const uint64_t n = counts_[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= LOG_BURST) {
    std::lock_guard lock(mutex_);
    sink_(kind, line);
  } else if ((n - LOG_BURST) % LOG_EVERY == 0) {
    std::lock_guard lock(mutex_);
    sink_(kind, line + " (" + std::to_string(LOG_EVERY - 1) + " more like it not logged)");
  }
}

}  // namespace vgpu
