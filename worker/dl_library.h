// SPDX-License-Identifier: GPL-2.0-or-later
// A library opened at run time (dlopen) and its entry points looked up one
// by one into a table: how the worker reaches cuBLAS (cublas_api.cc) and
// cuDNN (cudnn_api.cc) with no toolkit at build time.
#pragma once
#include <dlfcn.h>

#include <string>

#include "common/error.h"

namespace vgpu::worker::dl {

// Looks entry points up in one opened library; the first one it lacks is
// missing().
class Symbols {
 public:
  explicit Symbols(void* lib) : lib_(lib) {}

  // Sets `fn` to the library's symbol `name`; false when it has none.
  template <typename F>
  bool operator()(F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(lib_, name));
    if (fn == nullptr) missing_ = name;
    return fn != nullptr;
  }
  const std::string& missing() const { return missing_; }

 private:
  void* lib_;
  std::string missing_;
};

// Opens the first of `names` (strings) that dlopen opens (RTLD_NOW |
// RTLD_LOCAL) and fills an Api table from it: Api::library is the name that
// opened, and `lookup(Symbols& find, Api& a)` finds each entry point. Fails
// with `none` and each name's dlerror (not_found) when no name opens, or
// with the first entry point the library lacks (unsupported; the library
// is closed again).
template <typename Api, typename Names, typename Lookup>
Result<Api> load(const Names& names, const std::string& none, Lookup lookup) {
  std::string tried;
  void* lib = nullptr;
  Api a{};
  for (const auto& name : names) {
    lib = dlopen(std::string(name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      a.library = name;
      break;
    }
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (lib == nullptr) return fail(Errc::not_found, none + tried);
  Symbols find(lib);
  if (!lookup(find, a)) {
    dlclose(lib);
    return fail(Errc::unsupported, a.library + " has no " + find.missing());
  }
  return a;
}

}  // namespace vgpu::worker::dl
