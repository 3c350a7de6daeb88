#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The CUDA worker's checks on the GPU machine, in one call (docs/cuda-worker.md,
# "State"): copied as checks.sh beside run.sh by `scripts/gpu-guest-pack
# --checks`, which puts the worker's check programs in the payload.
#   checks.sh [--budget S] [--rounds N] [--launches N] [--guest-timeout S]
# In this order, each skipped when less than its share of the budget
# (default 170 s from the start) is left:
#   1. contain  vgpu-worker-check contain: a faulting and a runaway kernel
#               kill only their worker; the victim's results and p50
#   2. launch   vgpu-user-launch-bench through vgpu's libcuda on an fv-opt
#               testbed VM with a CUDA worker, against NVIDIA's libcuda,
#               rounds alternated (and the payload's checks-base/ build of
#               the same bench, when packed, as a third column); then one
#               traced run: the launch's phases and the worker's ring
#               traffic per launch (commands, bells, fence waits)
#   3. guest    run.sh --backend cuda,model --configs fv: a QEMU guest on
#               -device vgpu,backend=cuda with the real worker, then the
#               same guest on the model
#   4. corpus   vgpu-worker-check corpus: the corpus PTX on the real worker
#               against the interpreter, whole and sliced
# VGPU_CHECKS_WORKER_DEVICE=fake runs the launch row on fake workers (a
# dry run of this script where no GPU is). Full logs go to
# $OUT/checks-logs.tar.gz (else ./gpu-checks-results), the verdict to
# $OUT/verdict.txt and, last, to stdout. Exits non-zero when a step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
budget=170
rounds=4
launches=3000
guest_timeout=80
while (($#)); do
    case $1 in
        --budget) budget=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --launches) launches=$2; shift 2 ;;
        --guest-timeout) guest_timeout=$2; shift 2 ;;
        -h | --help) sed -n '3,25p' "$0"; exit 0 ;;
        *) echo "checks.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
done
start=$SECONDS
results=${OUT:-$PWD/gpu-checks-results}
mkdir -p "$results"
work=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-checks.XXXXXX")
logs=$work/logs
mkdir -p "$logs"
verdict=()
failed=0
note() { verdict+=("$*"); echo "== $*" >&2; }
# note_lines PREFIX < LINES: each line a note (in this shell: not a pipe's).
note_lines() {
    local l
    while IFS= read -r l; do note "$1$l"; done
}
finish() {
    tar -czf "$results/checks-logs.tar.gz" -C "$work" logs 2>/dev/null
    printf '%s\n' "${verdict[@]}" >"$results/verdict.txt"
    echo "==== verdict ($((SECONDS - start)) s) ===="
    printf '%s\n' "${verdict[@]}"
    rm -rf "$work"
}
trap finish EXIT
# left S: true when at least S seconds of the budget remain.
left() { (($(budget_left) >= $1)); }
budget_left() { echo $((budget - (SECONDS - start))); }

tar -xzf "$here/payload.tar.gz" -C "$work" || { note "FAIL unpack"; exit 1; }
[[ -d $work/checks ]] || { note "FAIL no checks/ in the payload (pack with scripts/gpu-guest-pack --checks)"; exit 1; }
nvlib=${VGPU_NVIDIA_LIB:-/usr/local/nvidia/lib64}
worker=$work/bin/vgpu-worker
check=$work/checks/worker/vgpu-worker-check
note "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n1), $(nproc) CPUs;" \
    "bundle $(sed -n 1p "$work/MANIFEST.txt")"
export LD_LIBRARY_PATH=$work/lib

# step NAME SECONDS_NEEDED TIMEOUT CMD...: runs CMD into logs/NAME.log;
# 99 when skipped for the budget.
step() {
    local name=$1 need=$2 limit=$3
    shift 3
    if ! left "$need"; then
        note "SKIP $name: $(budget_left) s of the budget left, it needs $need"
        return 99
    fi
    echo "==> checks.sh: $name ($*)" >&2
    timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1
}

if step contain 25 60 "$check" "$worker" contain; rc=$?; ((rc != 99)); then
    ((rc == 0)) || failed=$((failed + 1))
    note "contain rc=$rc: $(grep -c '^PASS' "$logs/contain.log") PASS, $(grep -c '^FAIL' "$logs/contain.log") FAIL"
    note_lines "  " < <(grep -E '^FAIL|^victim|^fault reported' "$logs/contain.log")
fi

# The launch row: rounds alternated between the worker path (vgpu's
# libcuda, fv-opt testbed VM, CUDA worker), direct CUDA and, when packed,
# the base build's worker path.
bench=$work/checks/worker/tests/vgpu-user-launch-bench
base_bench=$work/checks-base/worker/tests/vgpu-user-launch-bench
W=(env VGPU_CUDA_PORT=fv-opt "VGPU_WORKER_DEVICE=${VGPU_CHECKS_WORKER_DEVICE:-cuda}" "VGPU_WORKER_BINARY=$worker")
launch_round() {  # KIND ROUND
    case $1 in
        worker) "${W[@]}" "$bench" "$launches" 1 ;;
        base) "${W[@]}" "$base_bench" "$launches" 1 ;;
        direct) env "LD_LIBRARY_PATH=$nvlib:$work/lib" "$bench" "$launches" 1 ;;
    esac >"$logs/launch-$1-$2.log" 2>&1
}
kinds=(worker direct)
[[ -x $base_bench ]] && kinds+=(base)
if left 30; then
    for ((r = 1; r <= rounds; r++)); do
        left 25 || break
        for k in "${kinds[@]}"; do launch_round "$k" "$r" || note "FAIL launch $k round $r: $(tail -n2 "$logs/launch-$k-$r.log" | tr '\n' ' ')"; done
    done
    note_lines "" < <(python3 - "$logs" "${kinds[@]}" <<'EOF'
import glob, json, re, statistics, sys
logs, kinds = sys.argv[1], sys.argv[2:]
p50, device = {}, {}
for k in kinds:
    v = []
    for f in sorted(glob.glob(f"{logs}/launch-{k}-*.log")):
        for line in open(f, errors="replace"):
            m = re.match(r"round 1: launch-to-fence p50 ([\d.]+) us", line)
            if m:
                v.append(float(m.group(1)))
    p50[k] = v
    dev = [l.split(": ", 1)[1].strip() for f in glob.glob(f"{logs}/launch-{k}-1.log")
           for l in open(f, errors="replace") if l.startswith("device: ")]
    device[k] = dev[0] if dev else "?"
for k, v in p50.items():
    if v:
        print(f"launch {k} ({device[k]}): p50 per round {' '.join(f'{x:.2f}' for x in v)} us;"
              f" mean {statistics.mean(v):.2f}")
d = p50.get("direct") or []
for k in ("worker", "base"):
    if p50.get(k) and d:
        print(f"launch {k} - direct: +{statistics.mean(p50[k]) - statistics.mean(d):.2f} us (mean of round p50s; target +5)")
if p50.get("worker") and p50.get("base"):
    pairs = list(zip(p50["worker"], p50["base"]))
    print(f"launch worker - base: {statistics.mean(p50['worker']) - statistics.mean(p50['base']):+.2f} us;"
          f" worker lower in {sum(a < b for a, b in pairs)} of {len(pairs)} round pairs")
EOF
    )
    if left 20; then
        env VGPU_LAUNCH_TRACE=1 "${W[@]}" "$bench" 1000 1 >"$logs/launch-traced.log" 2>&1 ||
            note "FAIL traced launch run: $(tail -n2 "$logs/launch-traced.log" | tr '\n' ' ')"
        note_lines "  " < <(python3 - "$logs/launch-traced.log" "$logs/launch-worker-1.log" <<'EOF'
import json, re, sys
keep = ("api_entry", "gpfifo_fetch", "job_queued", "job_started", "device_prepared", "device_launched",
        "device_synced", "job_done", "result_seen", "release", "wait_return")
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("worker traffic"):
        print(line.strip())
    elif line.startswith('{"bench": "launch_phases"'):
        p50 = json.loads(line)["p50_us"]
        print("phases, p50 us from the doorbell: " + ", ".join(f"{k} {p50[k]:.2f}" for k in keep if k in p50))
sw, on = [], False
for line in open(sys.argv[2], errors="replace"):
    if line.startswith("context switches"):
        on = True
    elif on and line.startswith("  "):
        f = line.split()
        sw.append(f"{f[0]} {f[1]}/{f[2]}")
    else:
        on = False
print("context switches per launch (voluntary/involuntary): " + (", ".join(sw) or "none counted"))
EOF
        )
    fi
else
    note "SKIP launch: $(budget_left) s of the budget left"
fi

if [[ ! -x $work/bin/qemu-system-x86_64 ]]; then
    note "SKIP guest: no QEMU in the payload"
elif left 40; then
    echo "==> checks.sh: guest (run.sh --backend cuda,model --configs fv)" >&2
    OUT=$work/guest-out timeout -k 5 $(($(budget_left) - 5)) bash "$here/run.sh" --backend cuda,model --configs fv \
        --timeout "$guest_timeout" >"$logs/guest.log" 2>&1
    rc=$?
    ((rc == 0)) || failed=$((failed + 1))
    cp -r "$work/guest-out/gpu-guest" "$logs/guest" 2>/dev/null
    note "guest rc=$rc"
    for s in "$logs"/guest/summary-*.txt; do [[ -f $s ]] && note "  $(basename "$s" .txt): $(cat "$s")"; done
    note_lines "  " < <(grep -E '^(same|differs|FAIL)' "$logs/guest/figures.txt" 2>/dev/null | head -n12)
    note_lines "  " < <(grep -h '^FAIL' "$logs"/guest/logs/run-*.log 2>/dev/null | head -n6)
    note_lines "  " < <(grep -E '^!!!|^qemu-system-x86_64: ' "$logs/guest.log" | cut -c1-400 | head -n4)
else
    note "SKIP guest: $(budget_left) s of the budget left"
fi
if step corpus 40 60 "$check" "$worker" corpus "$work/checks/corpus"; rc=$?; ((rc != 99)); then
    ((rc == 0)) || failed=$((failed + 1))
    note "corpus rc=$rc: $(grep -c '^PASS' "$logs/corpus.log") PASS, $(grep -c '^FAIL' "$logs/corpus.log") FAIL;" \
        "$(tail -n1 "$logs/corpus.log")"
    note_lines "  " < <(grep '^FAIL' "$logs/corpus.log" | head -n5)
fi
note "checks: $failed step(s) failed"
((failed == 0))
