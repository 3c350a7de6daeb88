// SPDX-License-Identifier: GPL-2.0-or-later
// Writes the `image` target's seed with a bound channel (corpus/image/
// channel): the fixture's VM frozen after its saxpy and exported, so the
// seed names the channel the fixture's VRAM holds (image_fixture.h); with
// `sliced`, corpus/image/sliced instead: the same VM frozen inside a sliced
// 200 ms spin, so the seed's channel record has a push-buffer cursor and a
// launch between pieces (image version 3, docs/migration.md §19).
//   fuzz_image_seeds ROOT [sliced]   (ROOT: the source tree)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "mediator/fuzz/image_fixture.h"
#include "mediator/vgpu.h"

int main(int argc, char** argv) {
  const bool sliced = argc == 3 && std::string(argv[2]) == "sliced";
  if (argc != 2 && !sliced) {
    std::fprintf(stderr, "usage: %s SOURCE_ROOT [sliced]\n", argv[0]);
    return 2;
  }
  constexpr uint64_t FREEZE_NS = 5'000'000'000;
  constexpr uint64_t SPIN_NS = 200'000'000;
  constexpr auto INTO_SPIN = std::chrono::milliseconds(20);
  vgpu::fuzz::ImageFixture f = vgpu::fuzz::make_image_fixture();
  vgpu::mediator::Vgpu& v = *f.tb->vgpu(0);
  if (sliced) {
    if (!f.ctx->spin({SPIN_NS})) return 1;
    std::this_thread::sleep_for(INTO_SPIN);
  }
  if (auto frozen = v.freeze(FREEZE_NS); !frozen) {
    std::fprintf(stderr, "%s\n", frozen.error().what().c_str());
    return 1;
  }
  auto image = v.export_image();
  if (!image) {
    std::fprintf(stderr, "%s\n", image.error().what().c_str());
    return 1;
  }
  const std::string path = std::string(argv[1]) + "/mediator/fuzz/corpus/image/" + (sliced ? "sliced" : "channel");
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(image->data()), static_cast<std::streamsize>(image->size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("%s: %zu bytes\n", path.c_str(), image->size());
  v.thaw();
  return 0;
}
