# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2034  # the paths and lists are for the scripts that source this
# The one shell library of scripts/*: paths, step reporting and logs, the
# root rule, Debian packages and sources, meson builds. Sourced, not run:
#   source "$(dirname "$0")/lib/common.sh"
#
# Reporting: `step` announces a stage ("==> script: what") and a failure
# after it names it; `say` prints a detail line under it; `die` stops with
# a message. `logged NAME CMD...` keeps CMD's output in $LOG_DIR/NAME.log;
# when CMD fails, the failure report shows the end of that log.
# Root: `as_root CMD...` runs CMD directly as root, through sudo otherwise,
# and stops with a clear message when neither can work. Everything that
# changes the machine (apt-get install/update, /etc/apt) goes through it.

set -eEuo pipefail

# ---------------------------------------------------------------- paths
VGPU_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VGPU_CACHE=${VGPU_CACHE:-$HOME/.cache/vgpu}
QEMU_DIR=$VGPU_CACHE/qemu-7.2          # Debian's QEMU 7.2 source and our build of it
QEMU_SRC=$QEMU_DIR/src
QEMU_BUILD=$QEMU_DIR/build
FIRMWARE_DIR=$VGPU_CACHE/firmware      # BIOS, VGA and NIC option ROMs, from Debian packages
NVIDIA_HEADERS_DIR=$VGPU_CACHE/headers # scripts/fetch-nvidia-headers
# A bundle made by scripts/gpu-guest-pack brings its own QEMU, firmware folder
# (a few files, no Debian tree to fetch: scripts/qemu) and guest image, and
# keeps its logs where its caller says.
QEMU_BIN=${VGPU_QEMU_BIN:-$QEMU_BUILD/qemu-system-x86_64}
QEMU_FIRMWARE=${VGPU_QEMU_FIRMWARE:-}
GUEST_DIR=${VGPU_GUEST_DIR:-$VGPU_CACHE/guest}   # kernel extraction and initramfs
LOG_DIR=${VGPU_LOG_DIR:-$VGPU_CACHE/logs}
VGPU_BUILD_DIR=${VGPU_BUILD_DIR:-$VGPU_ROOT/build-qemu}              # our meson build (C API)
VGPU_GUEST_BUILD_DIR=${VGPU_GUEST_BUILD_DIR:-$VGPU_ROOT/build-guest} # static guest programs
JOBS=${VGPU_JOBS:-2}
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

# Debian packages the host build, tests and benchmarks need.
VGPU_HOST_PACKAGES=(
  meson ninja-build g++ pkg-config python3
  libgtest-dev libgmock-dev libopenblas-dev libpciaccess-dev
  gnuplot-nox
  libcli11-dev nlohmann-json3-dev  # the C++ commands' flags (CLI11) and JSON (vgpud, vgpuctl, the benches)
  libzstd-dev                   # libcuda: fat binaries' zstd-compressed entries
  clang-14 libclang-rt-14-dev   # user kernels: CUDA C to PTX (cuda/corpus), the libFuzzer targets
  universal-ctags               # scripts/long-functions: function extents
)

# What QEMU's firmware path (-L, scripts/qemu) is made of: seabios (BIOS,
# vgabios-stdvga.bin), qemu-system-data (linuxboot_dma.bin, kvmvapic.bin)
# and ipxe-qemu (efi-e1000.rom and the other NIC ROMs; Debian's own QEMU
# finds them through --firmwarepath=...:/usr/lib/ipxe/qemu).
FIRMWARE_PACKAGES=(seabios qemu-system-data ipxe-qemu)
FIRMWARE_PATHS=(usr/share/qemu usr/share/seabios usr/lib/ipxe/qemu)  # under $FIRMWARE_DIR/root

# ---------------------------------------------------------------- reporting
SCRIPT_NAME=$(basename "$0")
CURRENT_STEP="start"
CURRENT_LOG=""
exec {VGPU_STDERR}>&2   # failure reports go here even from inside a `logged` redirect

# step "what": announce a stage of the script; a failure after it names it.
step() {
  CURRENT_STEP=$1
  CURRENT_LOG=""
  echo "==> $SCRIPT_NAME: $1" >&2
}

# say "text": a detail line under the current step.
say() {
  echo "    $*" >&2
}

show_current_log() {
  if [[ -n $CURRENT_LOG && -s $CURRENT_LOG ]]; then
    echo "!!! last lines of $CURRENT_LOG:" >&"$VGPU_STDERR"
    tail -n 25 "$CURRENT_LOG" >&"$VGPU_STDERR"
  fi
}

# die "why": stop. Shows the end of the log of a `logged` command that just failed.
die() {
  echo "!!! $SCRIPT_NAME: $*" >&"$VGPU_STDERR"
  show_current_log
  exit 1
}

# usage_die "why": a usage error (a bad or missing argument): exit 2, before
# the script has changed anything.
usage_die() {
  echo "!!! $SCRIPT_NAME: $* (see --help)" >&"$VGPU_STDERR"
  exit 2
}

# Arguments for a script's `while (($#)); case $1` loop:
#   split_opts "$@"; set -- "${OPTS[@]}"   --opt=value becomes --opt value
#   --mode) need_value "$@"; mode=$2; shift 2 ;;
# need_value names the option whose value is missing (the end of the
# arguments, or another option where the value should be).
split_opts() {
  OPTS=()
  local a
  for a in "$@"; do
    if [[ $a == --*=* ]]; then
      OPTS+=("${a%%=*}" "${a#*=}")
    else
      OPTS+=("$a")
    fi
  done
}
need_value() {
  (($# >= 2)) || usage_die "$1 needs a value"
  [[ $2 != --* ]] || usage_die "$1 needs a value (found the option $2 instead)"
}

on_error() {
  local rc=$?
  echo "!!! $SCRIPT_NAME: FAILED in step: $CURRENT_STEP (exit $rc)" >&"$VGPU_STDERR"
  show_current_log
  exit "$rc"
}
trap on_error ERR

# logged NAME CMD...: run CMD with its output in $LOG_DIR/NAME.log and return
# its status. A failure leaves the log named for the failure report. CMD runs
# with errexit off (bash's rule left of ||): a function given as CMD must
# return its own failures.
logged() {
  local name=$1
  shift
  mkdir -p "$LOG_DIR"
  CURRENT_LOG=$LOG_DIR/$name.log
  "$@" >"$CURRENT_LOG" 2>&1 || return
  CURRENT_LOG=""
}

# ninja_progress NAME ninja ARGS...: run ninja, keep its full output in
# $LOG_DIR/NAME.log and print a progress line every 10% (ninja's [n/N]
# counter) and every error line. Returns ninja's status, as logged does.
ninja_progress() {
  local name=$1
  shift
  mkdir -p "$LOG_DIR"
  CURRENT_LOG=$LOG_DIR/$name.log
  "$@" 2>&1 | tee "$CURRENT_LOG" | {
    local line last=-10 pct
    while IFS= read -r line; do
      if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
        pct=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
        if ((pct >= last + 10)); then
          last=$((pct - pct % 10))
          printf '    %3d%% (%s/%s)\n' "$pct" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >&2
        fi
      elif [[ $line == *error:* || $line == FAILED:* ]]; then
        echo "    $line" >&2
      fi
    done
  } || return
  CURRENT_LOG=""
}

# ---------------------------------------------------------------- root
# as_root CMD...: run CMD as root: directly when root, through sudo otherwise.
as_root() {
  if ((EUID == 0)); then
    "$@"
    return
  fi
  command -v sudo >/dev/null ||
    die "'$*' needs root: run as root, or install sudo and allow this user to use it"
  if ! sudo -n true 2>/dev/null && [[ ! -t 0 ]]; then
    die "'$*' needs root: sudo asks for a password and there is no terminal to type it;" \
      "run as root or allow this user sudo without a password"
  fi
  sudo -- "$@"
}

# ---------------------------------------------------------------- Debian packages
apt_install() {
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# ensure_packages PKG...: apt-get install those not installed yet (the
# package lists are updated only when an install fails).
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  say "installing Debian packages: ${missing[*]}"
  if ! logged apt-install apt_install "${missing[@]}"; then
    logged apt-update as_root apt-get update -q || die "apt-get update failed"
    logged apt-install apt_install "${missing[@]}" || die "apt-get install failed for: ${missing[*]}"
  fi
}

# ensure_deb_src: apt-get source needs a deb-src entry. When the machine has
# none, add one made from its own debian.sources (same mirrors as its
# binary packages), or for deb.debian.org.
ensure_deb_src() {
  if grep -qs '^Types:.*deb-src' /etc/apt/sources.list.d/*.sources ||
    grep -qs '^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/*.list; then
    return 0
  fi
  local dest=/etc/apt/sources.list.d/vgpu-deb-src.sources tmp
  say "adding source package entries: $dest"
  tmp=$(mktemp)
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    { echo "# Added by vgpu scripts/lib/common.sh: QEMU and mesa sources come from Debian's source packages."
      sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources; } >"$tmp"
  else
    cat >"$tmp" <<'SRC'
# Added by vgpu scripts/lib/common.sh: QEMU and mesa sources come from Debian's source packages.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  logged deb-src as_root install -m 0644 "$tmp" "$dest" || die "could not write $dest"
  rm -f "$tmp"
  logged apt-update as_root apt-get update -q || die "apt-get update failed"
}

# apt_fetch NAME DIR apt-get ARGS...: run an apt-get download or source
# --download-only in DIR (no root needed), logged as NAME; when it fails,
# update the package lists and try once more.
apt_fetch() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  if ! logged "$name" env -C "$dir" "$@"; then
    logged apt-update as_root apt-get update -q || die "apt-get update failed"
    logged "$name" env -C "$dir" "$@" || die "'$*' failed"
  fi
}

# fetch_deb_tree DIR PKG...: download Debian packages (not installing them)
# and unpack them under DIR/root. Cached: DIR/.complete holds the package
# list, so a changed list fetches again.
fetch_deb_tree() {
  local dir=$1
  shift
  if [[ -f $dir/.complete && $(<"$dir/.complete") == "$*" ]]; then
    return 0
  fi
  say "fetching Debian packages $* into $dir"
  rm -rf "$dir.tmp"
  apt_fetch "download-$(basename "$dir")" "$dir.tmp/debs" apt-get download "$@"
  local deb
  for deb in "$dir.tmp"/debs/*.deb; do
    dpkg-deb -x "$deb" "$dir.tmp/root"
  done
  echo "$*" >"$dir.tmp/.complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

# fetch_firmware: QEMU's firmware tree (FIRMWARE_PACKAGES), cached.
fetch_firmware() {
  fetch_deb_tree "$FIRMWARE_DIR" "${FIRMWARE_PACKAGES[@]}"
}

# ---------------------------------------------------------------- meson builds
# configure_build DIR [meson options...]: set up $VGPU_ROOT/DIR once.
configure_build() {
  local dir=$1
  shift
  if [[ ! -f $VGPU_ROOT/$dir/build.ninja ]]; then
    say "configuring $dir"
    meson setup "$VGPU_ROOT/$dir" "$VGPU_ROOT" "$@" >/dev/null || die "meson setup $dir failed"
  fi
}

# set_build_option DIR NAME VALUE: set a meson option of $VGPU_ROOT/DIR,
# only when its value differs (setting one makes the next build regenerate).
# meson setup --reconfigure, not meson configure: it also knows an option
# that meson_options.txt gained after DIR was set up.
set_build_option() {
  local dir=$1 name=$2 value=$3 current
  current=$(meson introspect --buildoptions "$VGPU_ROOT/$dir" | python3 -c '
import json, sys
print(next((str(o["value"]) for o in json.load(sys.stdin) if o["name"] == sys.argv[1]), ""))' "$name")
  if [[ $current != "$value" ]]; then
    say "$dir: -D$name=$value"
    meson setup --reconfigure "$VGPU_ROOT/$dir" "$VGPU_ROOT" "-D$name=$value" >/dev/null ||
      die "meson setup --reconfigure $dir -D$name=$value failed"
  fi
}

# build DIR [ninja args...]
build() {
  local dir=$1
  shift
  say "building $dir"
  ninja -C "$VGPU_ROOT/$dir" "$@" || die "build of $dir failed"
}
