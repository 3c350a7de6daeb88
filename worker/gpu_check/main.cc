// SPDX-License-Identifier: GPL-2.0-or-later
// vgpu-worker-check (check.h):
//   vgpu-worker-check WORKER_BINARY corpus PTX_DIR
//   vgpu-worker-check WORKER_BINARY contain
//   vgpu-worker-check WORKER_BINARY bench OUT.json
//   vgpu-worker-check rewrite FILE.ptx   (the module as the worker loads it, data segment at
//                                        APERTURE_BASE + 1 MiB)
// WORKER_BINARY "none" with corpus: the rewrite on the interpreter only.
// Prints PASS/FAIL lines and figures; exit status 1 on any FAIL.
#include <unistd.h>

#include <climits>
#include "worker/ctaid_rewrite.h"
#include "worker/module_globals.h"
#include "worker/gpu_check/check.h"

using namespace vgpu::worker::check;

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "direct-child") return direct_child(argc, argv);
  if (argc == 3 && std::string(argv[1]) == "rewrite") {  // prints a module as the worker loads it
    std::string text = read_file(argv[2]), why;
    auto m = vgpu::ptx::parse_module(text);
    if (!m) return fprintf(stderr, "%s\n", m.error().message.c_str()), 1;
    auto placed = vgpu::worker::place_globals(text, **m, vgpu::worker::APERTURE_BASE + (1u << 20), why);
    if (!placed) return fprintf(stderr, "%s\n", why.c_str()), 1;
    printf("%s", vgpu::worker::rewrite_ctaid(*placed).text.c_str());
    return 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: vgpu-worker-check WORKER_BINARY corpus PTX_DIR | contain | bench OUT.json\n");
    return 2;
  }
  char self[PATH_MAX] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) return 2;
  std::string binary = argv[1], what = argv[2];
  Checker c;
  int rc = 2;
  if (what == "corpus" && argc == 4) rc = corpus_check(binary, argv[3], c);
  if (what == "contain") rc = contain_check(binary, c);
  if (what == "bench" && argc == 4) rc = bench(binary, self, argv[3], c);
  if (rc == 2) fprintf(stderr, "unknown or incomplete command '%s'\n", what.c_str());
  printf("%d failed\n", c.failures);
  return rc != 0 ? rc : c.failures ? 1 : 0;
}
