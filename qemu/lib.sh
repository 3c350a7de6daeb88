# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by scripts/qemu-build, scripts/qemu, scripts/guest-image and
# scripts/run-guest: paths, step reporting and package installation.
# Sourced, not run.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VGPU_CACHE=${VGPU_CACHE:-$HOME/.cache/vgpu}
QEMU_DIR=$VGPU_CACHE/qemu-7.2          # Debian's QEMU 7.2 source and our build of it
QEMU_SRC=$QEMU_DIR/src
QEMU_BUILD=$QEMU_DIR/build
QEMU_BIN=$QEMU_BUILD/qemu-system-x86_64
FIRMWARE_DIR=$VGPU_CACHE/firmware      # seabios and QEMU's option ROMs, from Debian packages
GUEST_DIR=$VGPU_CACHE/guest            # kernel extraction and initramfs
LOG_DIR=$VGPU_CACHE/logs
VGPU_BUILD_DIR=${VGPU_BUILD_DIR:-$REPO/build-qemu}     # our meson build (C API)
VGPU_GUEST_BUILD_DIR=${VGPU_GUEST_BUILD_DIR:-$REPO/build-guest}  # static guest programs
JOBS=${VGPU_JOBS:-2}

SCRIPT_NAME=$(basename "$0")
CURRENT_STEP="start"
CURRENT_LOG=""

# step "what": announce a step; a failure after it names it.
step() {
    CURRENT_STEP=$1
    CURRENT_LOG=""
    echo "==> $SCRIPT_NAME: $1" >&2
}

on_error() {
    local rc=$?
    echo "!!! $SCRIPT_NAME: FAILED in step: $CURRENT_STEP (exit $rc)" >&2
    if [[ -n $CURRENT_LOG && -f $CURRENT_LOG ]]; then
        echo "!!! last lines of $CURRENT_LOG:" >&2
        tail -n 25 "$CURRENT_LOG" >&2
    fi
    exit "$rc"
}
trap on_error ERR
set -eEuo pipefail

die() {
    echo "!!! $SCRIPT_NAME: $*" >&2
    exit 1
}

# logged NAME CMD...: run CMD with its output in $LOG_DIR/NAME.log.
logged() {
    local name=$1
    shift
    mkdir -p "$LOG_DIR"
    CURRENT_LOG=$LOG_DIR/$name.log
    "$@" >"$CURRENT_LOG" 2>&1
}

# ninja_progress LOG ninja ARGS...: run ninja, keep its full output in LOG and
# print a progress line every 10% (ninja's [n/N] counter).
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
    }
}

# need_packages PKG...: apt-get install those not installed yet.
need_packages() {
    local missing=()
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "    installing: ${missing[*]}" >&2
        logged apt-install env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "${missing[@]}" ||
            { logged apt-update apt-get update -q &&
              logged apt-install env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                  --no-install-recommends "${missing[@]}"; }
    fi
}

# fetch_deb_tree DIR PKG...: download Debian packages (not installing them)
# and unpack them under DIR. Cached: done once per DIR.
fetch_deb_tree() {
    local dir=$1
    shift
    [[ -f $dir/.complete ]] && return 0
    rm -rf "$dir" && mkdir -p "$dir/debs"
    (cd "$dir/debs" && logged "download-$(basename "$dir")" apt-get download "$@")
    local deb
    for deb in "$dir"/debs/*.deb; do
        dpkg-deb -x "$deb" "$dir/root"
    done
    touch "$dir/.complete"
}
