#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# vgpud makes no CUDA call of its own (--backend cuda is a worker process
# per VM): its executable needs none of libcuda, the CUDA runtime, cuBLAS
# or cuDNN (vgpud/no_cuda.cc keeps the in-process back end out).
#   no_cuda_test.sh PATH-TO-VGPUD
set -eu
needed=$(readelf -d "$1" | grep NEEDED) || { echo "readelf -d $1 found no NEEDED entry" >&2; exit 1; }
if echo "$needed" | grep -E 'libcuda|libcudart|libcublas|libcudnn'; then
    echo "vgpud needs a CUDA library (above)" >&2
    exit 1
fi
echo "$needed" | sed 's/.*Shared library: //' | tr '\n' ' '; echo
