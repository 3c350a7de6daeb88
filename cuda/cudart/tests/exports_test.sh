#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every function NVIDIA's libcudart.so.13 exports, vgpu's exports too, under
# the same version node (name@@libcudart.so.13): a program nvcc linked
# against NVIDIA's library then loads on vgpu's whatever it calls.
#   exports_test.sh VGPU_LIBCUDART NVIDIA_LIBCUDART
set -eu
ours=$1 theirs=$2
list() { nm -D --defined-only "$1" | awk '$2 == "T" {print $3}' | sort -u; }
missing=$(list "$theirs" | comm -23 - "$(list "$ours" >/tmp/vgpu-cudart-ours.$$; echo /tmp/vgpu-cudart-ours.$$)")
n_theirs=$(list "$theirs" | wc -l)
n_ours=$(wc -l </tmp/vgpu-cudart-ours.$$)
rm -f /tmp/vgpu-cudart-ours.$$
if [ -n "$missing" ]; then
    echo "FAIL: $(echo "$missing" | wc -l) of NVIDIA's $n_theirs exports are missing from $ours:"
    echo "$missing"
    exit 1
fi
echo "PASS: all $n_theirs of NVIDIA's exports (name@version) are in $ours ($n_ours exports)"
