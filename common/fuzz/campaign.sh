#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# campaign.sh SECONDS "TARGET:N[:RUNS] ..." [CORPORA_TGZ]
#
# A campaign of the guest-program targets (docs/fuzzing.md) on a machine
# that has none of the build: N libFuzzer processes of guest_fuzz per
# TARGET (bar, pushbuf, pagetable, pv, device; VGPU_FUZZ_SURFACE), all at
# once for SECONDS (and at most RUNS inputs each, when given). A target's
# processes share one corpus folder; each also reads the tree's kept
# inputs (seeds.tgz) and the dictionary (vgpu.dict). CORPORA_TGZ (a
# corpora.tgz an earlier run wrote) is where the corpora start; without
# it they start empty (from the kept inputs alone).
# It runs from a staging folder that holds it beside guest_fuzz (the
# --fast build), lib.tgz, vgpu.dict and seeds.tgz (docs/fuzzing.md,
# "The staging"); runs R and S of issue 40 used it as campaign9.sh.
# libFuzzer's -seed is $FUZZ_SEED_BASE + i, i = 0, 1, ... over all the
# processes in the order given. The settings are scripts/fuzz --fast's
# (kept attackers, VGPU_FUZZ_WAIT_MS=20 ...), -timeout=15, and
# OPENBLAS_NUM_THREADS=1.
# Writes under $OUT (the device machine brings back at most 8 files, 2
# folders down): corpora.tgz (the corpora now, TARGET/ each, for the next
# run), logs.tgz (each process's log TARGET-I.log, its exit status
# TARGET-I.rc, the load every 15 s), and findings/TARGET-I.tgz for up to 4
# processes with a finding or a slow input (libFuzzer's artifacts: crash-,
# timeout-, oom-, leak-, slow-unit-; and the fixture's history-* of the
# inputs before it, to replay in order), the rest in findings/more.tgz.
# Its last lines are the table: per target processes, inputs, inputs/s per
# process (min-max, libFuzzer's stat::average_exec_per_sec), cov and ft
# (the highest of its processes), findings, slow inputs; all from the logs.
# Exit status 1 when a process had a finding, else 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] && [[ $1 =~ ^[0-9]+$ ]] || {
  echo "usage: [FUZZ_SEED_BASE=N] OUT=DIR $0 SECONDS \"TARGET:N[:RUNS] ...\" [CORPORA_TGZ]" >&2
  exit 2
}
secs=$1
spec=$2
corpora_in=${3:-}
: "${OUT:?OUT names the folder for the results}"
seed_base=${FUZZ_SEED_BASE:-1}
[[ $seed_base =~ ^[0-9]+$ ]] || { echo "campaign: FUZZ_SEED_BASE='$seed_base' is not a number" >&2; exit 2; }
# A process past SECONDS + GRACE (an input running when its time ran out;
# libFuzzer checks the time between inputs) gets SIGTERM (libFuzzer prints
# its final stats; SIGINT would be ignored by background jobs of a
# script), 10 s later SIGKILL.
grace=${CAMPAIGN_GRACE_S:-20}
work=${CAMPAIGN_WORK:-/tmp/vgpu-campaign}
bin=$here/guest_fuzz

ulimit -c 0
rm -rf "$work"
mkdir -p "$work/lib" "$work/seeds" "$work/corpora" "$work/logs" "$work/found" "$OUT/findings" || exit 1
tar xzf "$here/lib.tgz" -C "$work/lib" || exit 1
tar xzf "$here/seeds.tgz" -C "$work/seeds" || exit 1
if [ -n "$corpora_in" ]; then
  tar xzf "$corpora_in" -C "$work/corpora" || { echo "campaign: cannot unpack $corpora_in" >&2; exit 1; }
fi
export LD_LIBRARY_PATH=$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENBLAS_NUM_THREADS=1
export VGPU_FUZZ_REUSE=256 VGPU_FUZZ_RESET_EVERY=64 VGPU_FUZZ_CONTEXT_EVERY=64 VGPU_FUZZ_FILL_EVERY=16
export VGPU_FUZZ_WAIT_MS=20 VGPU_FUZZ_OP_WAIT_MS=5
if ! "$bin" -help=1 >/dev/null 2>&1; then
  echo "campaign: $bin does not start here:" >&2
  "$bin" -help=1 2>&1 | head -5 >&2
  exit 1
fi

targets=()   # in the order given
declare -A nprocs=() nruns=()
for item in $spec; do
  IFS=: read -r t n r <<<"$item"
  case "$t" in bar|pushbuf|pagetable|pv|device) ;; *) echo "campaign: no target '$t'" >&2; exit 2 ;; esac
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "campaign: '$item': N must be a number above 0" >&2; exit 2; }
  [ -z "${nprocs[$t]:-}" ] && targets+=("$t")
  nprocs[$t]=$n
  nruns[$t]=${r:-}
  [ ! -d "$work/seeds/$t" ] && { echo "campaign: seeds.tgz has no $t/" >&2; exit 2; }
  mkdir -p "$work/corpora/$t"
done

started=$(date +%s)
echo "campaign: $(date -u +%H:%M:%S) $secs s, $spec, seeds from $seed_base, $(nproc) cores," \
  "corpora from ${corpora_in:-the kept inputs alone}"
for t in "${targets[@]}"; do
  echo "campaign: $t: $(find "$work/corpora/$t" -type f | wc -l) corpus inputs, $(find "$work/seeds/$t" -type f | wc -l) kept"
done

pids=()
names=()
i=0
for t in "${targets[@]}"; do
  for ((j = 0; j < nprocs[$t]; j++)); do
    name=$t-$j
    mkdir -p "$work/found/$name/history"
    args=(-timeout=15 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -entropic=0
          -dict="$here/vgpu.dict" -seed=$((seed_base + i)) -max_total_time="$secs"
          -artifact_prefix="$work/found/$name/")
    [ -n "${nruns[$t]}" ] && args+=(-runs="${nruns[$t]}")
    VGPU_FUZZ_SURFACE=$t VGPU_FUZZ_HISTORY=$work/found/$name/history \
      "$bin" "${args[@]}" "$work/corpora/$t" "$work/seeds/$t" >"$work/logs/$name.log" 2>&1 &
    pids+=($!)
    names+=("$name")
    i=$((i + 1))
  done
done
echo "campaign: $i processes started"

# The load every 15 s, and the stop for processes past their time.
# Each loop ends its own sleep when it is told to stop (no sleep left behind).
(
  trap 'kill $sp 2>/dev/null; exit 0' TERM
  while :; do
    sleep 15 & sp=$!; wait $sp
    echo "$(($(date +%s) - started)) $(cut -d' ' -f1-3 /proc/loadavg)"
  done
) >"$work/logs/load.txt" &
load_pid=$!
(
  trap 'kill $sp 2>/dev/null; exit 0' TERM
  sleep $((secs + grace)) & sp=$!; wait $sp
  echo "campaign: processes past $((secs + grace)) s get SIGTERM" >&2
  kill -TERM "${pids[@]}" 2>/dev/null
  sleep 10 & sp=$!; wait $sp
  kill -KILL "${pids[@]}" 2>/dev/null
) &
stop_pid=$!

for k in "${!pids[@]}"; do
  wait "${pids[$k]}"
  echo $? >"$work/logs/${names[$k]}.rc"
done
kill "$stop_pid" "$load_pid" 2>/dev/null
wait "$stop_pid" "$load_pid" 2>/dev/null
ended=$(date +%s)
echo "campaign: $(date -u +%H:%M:%S) all $i processes ended after $((ended - started)) s"

# Findings: a process that exited non-zero or left an artifact; slow: a
# slow-unit artifact or a history the fixture's watchdog wrote (an input
# past 8 s). Each such process's folder goes back packed.
flagged=()
for name in "${names[@]}"; do
  d=$work/found/$name
  rc=$(cat "$work/logs/$name.rc")
  artifact=0
  for kind in crash timeout oom leak; do compgen -G "$d/$kind-*" >/dev/null && artifact=1; done
  # 72: libFuzzer's exit after the stop's SIGTERM, 137: SIGKILL: an input
  # ran past SECONDS + GRACE (a hang, or a slow input), not a verdict.
  stopped=0
  { [ "$rc" = 72 ] || [ "$rc" = 137 ]; } && [ $artifact = 0 ] && stopped=1
  if [ $artifact = 1 ] || { [ "$rc" != 0 ] && [ $stopped = 0 ]; }; then
    echo finding >"$d/verdict"
  elif [ $stopped = 1 ] || compgen -G "$d/slow-unit-*" >/dev/null || compgen -G "$d/history/history-*" >/dev/null; then
    echo slow >"$d/verdict"
  else
    continue
  fi
  cp "$work/logs/$name.log" "$d/"
  flagged+=("$name")
done
for k in "${!flagged[@]}"; do
  if [ "$k" -lt 4 ]; then
    tar czf "$OUT/findings/${flagged[$k]}.tgz" -C "$work/found" "${flagged[$k]}"
  fi
done
[ ${#flagged[@]} -gt 4 ] && tar czf "$OUT/findings/more.tgz" -C "$work/found" "${flagged[@]:4}"

tar czf "$OUT/corpora.tgz" -C "$work/corpora" "${targets[@]}"
tar czf "$OUT/logs.tgz" -C "$work/logs" .
# The device brings back files of at most 16 MiB: past 15 MiB the logs go
# back without libFuzzer's NEW and REDUCE lines (the table is made from
# the whole logs here).
if [ "$(stat -c %s "$OUT/logs.tgz")" -gt $((15 * 1024 * 1024)) ]; then
  mkdir -p "$work/short"
  for f in "$work/logs"/*; do grep -vE '^#[0-9]+'$'\t''(NEW|REDUCE) ' "$f" >"$work/short/${f##*/}"; done
  tar czf "$OUT/logs.tgz" -C "$work/short" .
  echo "campaign: logs.tgz over 15 MiB: packed without the NEW and REDUCE lines"
fi
echo "campaign: packed in $(($(date +%s) - ended)) s: corpora.tgz $(du -h "$OUT/corpora.tgz" | cut -f1)," \
  "logs.tgz $(du -h "$OUT/logs.tgz" | cut -f1), ${#flagged[@]} process(es) in findings/"

# The table, from the logs alone.
# units: stat::number_of_executed_units, else the last "#N" line (a
# process killed before its final stats); rate: stat::average_exec_per_sec,
# else the last "exec/s:".
proc_stats() {
  awk '
    /^stat::number_of_executed_units:/ {units = $2}
    /^stat::average_exec_per_sec:/ {rate = $2}
    /^#[0-9]+/ {n = substr($1, 2); if (n + 0 > last + 0) last = n
                for (f = 1; f < NF; f++) {
                  if ($f == "cov:") cov = $(f + 1)
                  if ($f == "ft:") ft = $(f + 1)
                  if ($f == "exec/s:") lrate = $(f + 1)
                }}
    /fuzz fixture: [0-9]+ inputs, [0-9]+ fresh attackers/ {fresh = $5; fin = $3}
    END {
      if (units == "") units = last + 0
      if (rate == "") rate = lrate + 0
      printf "%d %d %d %d %d %d\n", units, rate, cov + 0, ft + 0, fresh + 0, fin + 0
    }' "$1"
}
load=$(awk 'NR == 1 {lo = $2; hi = $2} {if ($2 < lo) lo = $2; if ($2 > hi) hi = $2} END {if (NR) printf "%s-%s", lo, hi; else print "-"}' \
  "$work/logs/load.txt")
echo
echo "campaign: $spec for $secs s ($((ended - started)) s of wall), libFuzzer seeds $seed_base-$((seed_base + i - 1))," \
  "load (1 min) $load on $(nproc) cores"
printf '%-10s %9s %11s %17s %16s %9s %5s %9s\n' target processes inputs "inputs/s/process" "cov, ft" findings slow "fresh att."
total=0
for t in "${targets[@]}"; do
  sum=0 lo="" hi=0 cov=0 ft=0 nf=0 ns=0 fresh=0 fin=0
  for ((j = 0; j < nprocs[$t]; j++)); do
    read -r u r c f fr fi < <(proc_stats "$work/logs/$t-$j.log")
    sum=$((sum + u))
    [ -z "$lo" ] || [ "$r" -lt "$lo" ] && lo=$r
    [ "$r" -gt "$hi" ] && hi=$r
    [ "$c" -gt "$cov" ] && cov=$c
    [ "$f" -gt "$ft" ] && ft=$f
    fresh=$((fresh + fr))
    fin=$((fin + fi))
    v=$(cat "$work/found/$t-$j/verdict" 2>/dev/null)
    [ "$v" = finding ] && nf=$((nf + 1))
    [ "$v" = slow ] && ns=$((ns + 1))
  done
  total=$((total + sum))
  fresh_pct=-
  [ "$fin" -gt 0 ] && fresh_pct=$(awk -v a="$fresh" -v b="$fin" 'BEGIN {printf "%.1f%%", 100 * a / b}')
  printf '%-10s %9d %11d %17s %16s %9d %5d %9s\n' "$t" "${nprocs[$t]}" "$sum" "$lo-$hi" "$cov, $ft" "$nf" "$ns" "$fresh_pct"
done
echo "campaign: $total inputs in all; per process: $(for n in "${names[@]}"; do
  read -r u r _ < <(proc_stats "$work/logs/$n.log"); printf '%s %d (%d/s, rc %s); ' "$n" "$u" "$r" "$(cat "$work/logs/$n.rc")"
done)" | fold -w 160
if [ ${#flagged[@]} -gt 0 ]; then
  echo "campaign: findings or slow inputs in: ${flagged[*]} (\$OUT/findings)"
  # At most 8 lines, so that the table stays inside the last 32 lines.
  for name in "${flagged[@]:0:8}"; do
    rc=$(cat "$work/logs/$name.rc")
    why=$(grep -m1 -oE 'FUZZ FINDING: .*|SUMMARY: .*|ERROR: libFuzzer: .*|fuzz fixture: input running .*' \
      "$work/logs/$name.log" | cut -c1-140)
    echo "  $name ($(cat "$work/found/$name/verdict"), exit status $rc):" \
      "${why:-no verdict in its log}$([ "$rc" = 72 ] || [ "$rc" = 137 ] && echo ", stopped past $((secs + grace)) s")"
  done
  [ ${#flagged[@]} -gt 8 ] && echo "  ... and $((${#flagged[@]} - 8)) more (findings/, logs.tgz)"
fi
# Exit status: 1 when some process had a finding (slow inputs alone: 0).
for name in "${flagged[@]}"; do [ "$(cat "$work/found/$name/verdict")" = finding ] && exit 1; done
exit 0
