#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every function NVIDIA's libcudart.so.13 exports, vgpu's exports too, under
# the same version node (name@@libcudart.so.13): a program nvcc linked
# against NVIDIA's library then loads on vgpu's whatever it calls.
#   exports_test.sh VGPU_LIBCUDART NVIDIA_LIBCUDART
set -eu
ours=$1 theirs=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
list() { nm -D --defined-only "$1" | awk '$2 == "T" {print $3}' | sort -u; }
list "$ours" >"$tmp/ours"
list "$theirs" >"$tmp/theirs"
comm -23 "$tmp/theirs" "$tmp/ours" >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
    echo "FAIL: $(wc -l <"$tmp/missing") of NVIDIA's $(wc -l <"$tmp/theirs") exports are missing from $ours:"
    cat "$tmp/missing"
    exit 1
fi
echo "PASS: all $(wc -l <"$tmp/theirs") of NVIDIA's exports (name@version) are in $ours ($(wc -l <"$tmp/ours") exports)"
