# SPDX-License-Identifier: GPL-2.0-or-later
# Shared shell helpers for scripts/*: package installation and builds.
set -euo pipefail

VGPU_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VGPU_CACHE="${VGPU_CACHE:-$HOME/.cache/vgpu}"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

# Debian packages the host build, tests and benchmarks need.
VGPU_HOST_PACKAGES=(
  meson ninja-build g++ pkg-config python3
  libgtest-dev libgmock-dev libopenblas-dev libpciaccess-dev
  gnuplot-nox
)

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Install the Debian packages that are not installed yet.
ensure_packages() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null || die "apt-get install failed for: ${missing[*]}"
}

# configure_build DIR [meson options...]: set up DIR once, reconfigure if needed.
configure_build() {
  local dir="$1"; shift
  if [ ! -f "$VGPU_ROOT/$dir/build.ninja" ]; then
    say "configuring $dir"
    meson setup "$VGPU_ROOT/$dir" "$VGPU_ROOT" "$@" >/dev/null || die "meson setup $dir failed"
  fi
}

build() {
  local dir="$1"; shift
  say "building $dir"
  ninja -C "$VGPU_ROOT/$dir" "$@" || die "build of $dir failed"
}
