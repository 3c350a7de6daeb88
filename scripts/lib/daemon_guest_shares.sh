#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ./scripts/bench daemon-guests: real-time shares of separate QEMU guests
# on one vgpud daemon (docs/benchmarks.md). Each guest runs the guest test
# bench_spin_stream: spin kernels of vgpu_spin_ms back to back, one
# outstanding. Shares are the daemon's GPU time per VM (vgpuctl stats)
# over --seconds, measured once every VM has GPU time.
source "$(dirname "$0")/common.sh"

seconds=20
policies=fifo,credit,band
long_ms=10
while (($#)); do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --long-ms) long_ms=$2; shift 2 ;;
        --policies) policies=$2; shift 2 ;;
        *) die "unknown argument: $1" ;;
    esac
done
"$VGPU_ROOT/scripts/qemu-build" >/dev/null
"$VGPU_ROOT/scripts/guest-image" --out "$GUEST_DIR" >/dev/null
run_dir=$(mktemp -d /tmp/vgpu-guest-shares-XXXXXX)
trap 'rm -rf "$run_dir"' EXIT
sock=$run_dir/vgpud.sock
ctl() { "$VGPU_ROOT/build/vgpud/vgpuctl" --socket "$sock" "$@"; }

# run POLICY WEIGHTS... : VM i has weight WEIGHTS[i]; VM 0 runs 1 ms kernels, the others --long-ms (10).
run() {
    local policy=$1
    shift
    local weights=("$@") pids=() i n=$#
    "$VGPU_ROOT/build/vgpud/vgpud" --socket "$sock" --vram 2G --max-vms 4 --scheduler "$policy" 2>"$run_dir/vgpud.log" &
    local daemon_pid=$!
    for _ in $(seq 100); do ctl stats >/dev/null 2>&1 && break; sleep 0.1; done
    for ((i = 0; i < n; i++)); do
        local ms=$long_ms
        ((i == 0)) && ms=1
        "$VGPU_ROOT/scripts/run-guest" --no-build --mode fv --vram 64 --socket "$sock" --name "vm$i" \
            --device-args "weight=${weights[$i]}" --tests bench_spin_stream --timeout $((seconds + 200)) \
            --append "vgpu_spin_ms=$ms vgpu_spin_s=$((seconds + 60))" >"$run_dir/vm$i.out" 2>&1 &
        pids+=($!)
    done
    # Every VM attached and running kernels.
    for _ in $(seq 1200); do
        ctl stats | python3 -c '
import json, sys
vms = json.load(sys.stdin)["vms"]
sys.exit(0 if len(vms) == int(sys.argv[1]) and all(v["gpu_ns"] > 0 for v in vms) else 1)' "$n" 2>/dev/null && break
        sleep 0.1
    done
    sleep 2
    ctl stats >"$run_dir/before.json"
    sleep "$seconds"
    ctl stats >"$run_dir/after.json"
    python3 - "$run_dir/before.json" "$run_dir/after.json" "$policy" "$seconds" "$long_ms" "${weights[@]}" <<'PY'
import json, sys
before = {v["name"]: v["gpu_ns"] for v in json.load(open(sys.argv[1]))["vms"]}
after = {v["name"]: v["gpu_ns"] for v in json.load(open(sys.argv[2]))["vms"]}
policy, seconds, long_ms, weights = sys.argv[3], float(sys.argv[4]), sys.argv[5], [int(w) for w in sys.argv[6:]]
used = [after.get("vm%d" % i, 0) - before.get("vm%d" % i, 0) for i in range(len(weights))]
total = sum(used) or 1
row = "  ".join("vm%d (%s ms, w%d) %.3f [target %.3f]" % (i, "1" if i == 0 else long_ms, w, u / total, w / sum(weights))
                for i, (u, w) in enumerate(zip(used, weights)))
print("  %-6s %s  util %.3f" % (policy, row, sum(used) / 1e9 / seconds))
PY
    # The guests would spin on: stop their QEMUs, then the daemon.
    local qemus
    qemus=$(python3 -c 'import json, sys; print(" ".join(str(v["pid"]) for v in json.load(open(sys.argv[1]))["vms"]))' \
        "$run_dir/after.json")
    kill -TERM $qemus 2>/dev/null || true
    for p in "${pids[@]}"; do wait "$p" || true; done
    kill -TERM "$daemon_pid"
    wait "$daemon_pid" || true
}

echo "shares of separate QEMU guests (TCG) on one vgpud over $seconds s, after every VM has GPU time"
IFS=, read -r -a pols <<<"$policies"
echo " 2 VMs, weights 1:1"
for p in "${pols[@]}"; do run "$p" 1 1; done
echo " 2 VMs, weights 1:3"
for p in "${pols[@]}"; do run "$p" 1 3; done
echo " 4 VMs, weights 1:1:1:1"
for p in "${pols[@]}"; do run "$p" 1 1 1 1; done
