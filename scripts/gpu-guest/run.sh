#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The run script of a bundle made by scripts/gpu-guest-pack (it is copied in
# as run.sh, beside payload.tar.gz): boots the test guest under TCG with
# -device vgpu,backend=cuda on a machine that has none of the build tree,
# runs the guest tests and workloads, and prints their results and figures.
#   run.sh [--backend LIST] [--configs LIST] [--tests WHICH] [--timeout S]
#     --backend  cuda (default), model, or both in turn: cuda,model
#     --configs  comma list (default fv,passthrough), each one guest run:
#                  fv           mode=fv, BAR remap, lazy shadowing, VFIO
#                               (scripts/run-guest --mode fv: fv-opt)
#                  passthrough  mode=passthrough, VFIO
#                  fv-naive     mode=fv, bar-remap=off, lazy-shadow=off, no VFIO
#                  fv-pv        fv with the paravirtual interface (pv=on)
#     --tests    all (default), conformance, workloads or one test name
#     --timeout  seconds per guest run (default 300)
# Results go to $OUT/gpu-guest when OUT is set (else ./gpu-guest-results):
# each run's console and counters (logs/), summary lines, and
# figures.json / figures.txt (scripts/gpu-guest/figures.py). Needs bash, tar,
# gzip and the CUDA libraries in VGPU_CUDA_LIB (default /usr/local/cuda/lib64);
# python3 only for the figures table. Exits non-zero when a run failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() {
    echo "!!! run.sh: $*" >&2
    exit 1
}

backends=cuda
configs=fv,passthrough
tests=all
timeout_s=300
while (($#)); do
    case $1 in
        --backend) backends=$2; shift 2 ;;
        --configs) configs=$2; shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        -h | --help) sed -n '3,21p' "$0"; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done

# The guest runs of each configuration: scripts/run-guest's own options.
config_args() {
    case $1 in
        fv) echo "--mode fv" ;;
        passthrough) echo "--mode passthrough" ;;
        fv-naive) echo "--mode fv --bar-remap off --lazy-shadow off --vfio off" ;;
        fv-pv) echo "--mode fv --pv on" ;;
        *) return 1 ;;
    esac
}
IFS=, read -r -a backend_list <<<"$backends"
IFS=, read -r -a config_list <<<"$configs"
for b in "${backend_list[@]}"; do
    [[ $b == cuda || $b == model ]] || die "--backend: '$b' is not cuda or model"
done
for c in "${config_list[@]}"; do
    config_args "$c" >/dev/null || die "--configs: '$c' is not fv, passthrough, fv-naive or fv-pv"
done
[[ -f $here/payload.tar.gz ]] || die "no payload.tar.gz beside run.sh (make the bundle with scripts/gpu-guest-pack)"

results=${OUT:+$OUT/gpu-guest}
results=${results:-$PWD/gpu-guest-results}
mkdir -p "$results/logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-gpu-guest.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$here/payload.tar.gz" -C "$work"
tee "$results/MANIFEST.txt" <"$work/MANIFEST.txt"

# Everything the bundle's QEMU loads comes from its lib/ folder, the CUDA
# libraries from the machine's CUDA, the C and C++ runtimes from the system.
cuda_lib=${VGPU_CUDA_LIB:-/usr/local/cuda/lib64}
export LD_LIBRARY_PATH=$work/lib:$cuda_lib
export VGPU_QEMU_BIN=$work/bin/qemu-system-x86_64
export VGPU_QEMU_FIRMWARE=$work/firmware
export VGPU_GUEST_DIR=$work/guest
export VGPU_CACHE=$work/cache
export VGPU_LOG_DIR=$results/logs
missing=$(ldd "$VGPU_QEMU_BIN" | grep 'not found' || true)
[[ -z $missing ]] || die "QEMU's libraries are missing here (VGPU_CUDA_LIB=$cuda_lib):"$'\n'"$missing"
{
    echo "host: $(uname -srm), $(nproc) CPUs"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /' ||
            echo "gpu: nvidia-smi failed"
    else
        echo "gpu: no nvidia-smi"
    fi
} | tee "$results/machine.txt"

# The table, written again after every run: a run cut short by a time limit
# leaves the figures of those before it.
figures() {
    command -v python3 >/dev/null || return 0
    python3 "$work/scripts/gpu-guest/figures.py" "$results" "${runs[@]}" >"$results/figures.txt" ||
        echo "!!! run.sh: figures.py failed (the consoles are in $results/logs)" >&2
}

failed=0
runs=()
for backend in "${backend_list[@]}"; do
    for config in "${config_list[@]}"; do
        run=$backend-$config
        read -r -a args <<<"$(config_args "$config")"
        echo "==> run.sh: guest run $run (backend=$backend, ${args[*]})" >&2
        if ! "$work/scripts/run-guest" --no-build --backend "$backend" "${args[@]}" --tests "$tests" \
            --timeout "$timeout_s" --summary-file "$results/summary-$run.txt" 2>&1 |
            tee "$results/logs/run-$run.log"; then
            failed=$((failed + 1))
        fi
        runs+=("$run")
        figures
    done
done

if [[ -f $results/figures.txt ]]; then
    cat "$results/figures.txt"
else
    echo "no python3: the figures are in the consoles under $results/logs" >&2
fi
echo "==> run.sh: ${#runs[@]} guest run(s), $failed failed; results in $results" >&2
((failed == 0))
