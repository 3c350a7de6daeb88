// SPDX-License-Identifier: GPL-2.0-or-later
#include "worker/find_binary.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vgpu::worker {

Result<std::string> find_worker_binary(const std::string& self, const std::string& installed, const std::string& what,
                                       const std::string& give) {
  const size_t slash = self.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  std::string tried;
  for (const std::string& path : {dir + "/vgpu-worker", dir + "/../worker/vgpu-worker", installed}) {
    if (access(path.c_str(), X_OK) == 0) return path;
    tried += (tried.empty() ? "" : ", ") + path + " (" + std::strerror(errno) + ")";
  }
  return fail(Errc::not_found, what + ": no vgpu-worker executable found (give " + give + "); tried " + tried);
}

}  // namespace vgpu::worker
