// SPDX-License-Identifier: GPL-2.0-or-later
// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput in the
// ordinary build, so that the suite runs every kept input (the seeds and
// every finding's input) with its sanitizers: `NAME_replay DIR|FILE...`.
// Prints "replayed N inputs"; a crash or a sanitizer report fails it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
int replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", file.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto start = std::chrono::steady_clock::now();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
  // VGPU_REPLAY_TIMES=1: each input's time, for a profile of a corpus.
  static const bool times = std::getenv("VGPU_REPLAY_TIMES") != nullptr;
  if (times) std::fprintf(stderr, "replay-time %.0f us %s\n", us.count(), file.c_str());
  // VGPU_REPLAY_MAX_MS=N: an input that runs longer fails the replay (a
  // hang's regression test: an op that waited on far more than its bound).
  static const char* max_ms = std::getenv("VGPU_REPLAY_MAX_MS");
  if (max_ms && us.count() > std::strtod(max_ms, nullptr) * 1000) {
    std::fprintf(stderr, "%s ran %.0f ms, over VGPU_REPLAY_MAX_MS=%s\n", file.c_str(), us.count() / 1000, max_ms);
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  size_t count = 0;
  int errors = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      // In name order: kept attackers carry state from input to input.
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) errors += replay(f), ++count;
    } else {
      errors += replay(p), ++count;
    }
  }
  std::printf("replayed %zu inputs\n", count);
  return errors == 0 && count > 0 ? 0 : 1;
}
