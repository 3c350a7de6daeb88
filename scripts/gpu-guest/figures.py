#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The results of a gpu-guest bundle's guest runs, side by side.

    figures.py RESULTS_DIR RUN...

Each RUN (e.g. cuda-fv) is RESULTS_DIR/logs/run-RUN.log: what
scripts/run-guest printed (the guest's console, then the vGPU counters and
its verdict). The guest programs print "PASS name (1.23 s)" or "FAIL name:
why" per test; the harness prints a test's figures as indented lines before
its result line, a program without timings (pci_probe) after it. Writes
RESULTS_DIR/figures.json and prints a table: each run's summary and wall
time (with what QEMU and run-guest said: a failed realize, a run's verdict),
each test's seconds per run, then each test's figures per run.
"""
import json
import re
import sys

# A result's parenthesis is its seconds or, for the CUDA runtime programs,
# what it checked ("PASS rt_device_errors (one device ..., errors named)").
RESULT = re.compile(r"^(PASS|FAIL) ([^\s:]+)(?: \((?:([\d.]+) s|.*)\))?(?:: (.*))?$")
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$")
WALL = re.compile(r"wall time ([\d.]+)s")
COUNTERS = "==> run-guest: vGPU counters"


def parse_run(path):
    """One run's tests, summary, wall time and counters from its log."""
    run = {"device": None, "tests": {}, "summary": None, "wall_s": None, "counters": {}}
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as e:
        run["error"] = f"no log {path}: {e.strerror}"
        return run
    notes, last, in_counters = [], None, False
    for line in lines:
        if line.startswith("==> "):
            in_counters = line.startswith(COUNTERS)
            m = WALL.search(line)
            if m:
                run["wall_s"] = float(m.group(1))
            continue
        if in_counters and line.startswith("    "):
            key, _, value = line.strip().partition(" ")
            if key:
                value = value.strip()
                run["counters"][key] = int(value) if value.isdigit() else value
            continue
        in_counters = False
        if line.startswith("!!! ") or line.startswith("qemu-system-x86_64: "):
            run.setdefault("messages", []).append(line.removeprefix("!!! "))
            continue
        m = RESULT.match(line)
        if m:
            status, name, seconds = m.group(1), m.group(2), m.group(3)
            test = {"status": status, "seconds": float(seconds) if seconds else None, "notes": notes}
            if status == "FAIL":
                test["reason"] = m.group(4) or ""
            run["tests"][name] = test
            notes, last = [], (test if seconds is None else None)
            continue
        m = SUMMARY.match(line)
        if m:
            run["summary"] = line
            continue
        if line.startswith("    -device "):  # run-guest's own line: the device's options
            run["device"] = line.strip()
        elif line.startswith("    "):
            if last is not None:  # notes of a program that prints them after its result
                last["notes"].append(line.strip())
            else:
                notes.append(line.strip())
        else:
            last = None
    return run


def print_same_as_model(runs):
    """Each cuda-CONFIG run beside model-CONFIG: the same tests with the same
    result (every guest test checks its own results: against the CPU's
    reference, the model's kernels or the expected error)."""
    for name, run in runs.items():
        model = runs.get("model-" + name.removeprefix("cuda-")) if name.startswith("cuda-") else None
        if model is None:
            continue
        mine = {t: r["status"] for t, r in run["tests"].items()}
        theirs = {t: r["status"] for t, r in model["tests"].items()}
        diff = sorted(t for t in set(mine) | set(theirs) if mine.get(t) != theirs.get(t))
        passed = sum(s == "PASS" for s in mine.values())
        if not mine:
            print(f"differs from the model: {name} ran no test")
        elif not diff:
            print(f"same as the model: {name} {passed} PASS of {len(mine)} tests, each as in model-{name[5:]}")
        else:
            cells = ", ".join(f"{t} {mine.get(t, '-')}/{theirs.get(t, '-')}" for t in diff[:12])
            print(f"differs from the model: {name} vs model-{name[5:]}: {len(diff)} tests (cuda/model): {cells}")


def main(args):
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, names = args[0], args[1:]
    runs = {name: parse_run(f"{out}/logs/run-{name}.log") for name in names}
    try:
        machine = open(f"{out}/machine.txt").read().splitlines()
    except OSError:
        machine = []
    json.dump({"machine": machine, "runs": runs}, open(f"{out}/figures.json", "w"), indent=1)

    print("\n".join(machine))
    width = max(len(n) for n in names)
    print(f"\n{'run':<{width}}  {'summary':<22} wall_s  device")
    for name, run in runs.items():
        wall = f"{run['wall_s']:.1f}" if run["wall_s"] is not None else "-"
        print(f"{name:<{width}}  {run['summary'] or 'no summary':<22} {wall:>6}  {run['device'] or ''}")
        for e in run.get("messages", []) + ([run["error"]] if "error" in run else []):
            print(f"{'':<{width}}  {e}")
    print_same_as_model(runs)
    tests = []
    for run in runs.values():
        tests += [t for t in run["tests"] if t not in tests]
    col = max(width, 8)
    tw = max([len(t) for t in tests] + [4])
    print(f"\n{'test':<{tw}}  " + "  ".join(f"{n:>{col}}" for n in names) + "   (seconds)")
    for t in tests:
        cells = []
        for run in runs.values():
            r = run["tests"].get(t)
            cell = "-" if r is None else r["status"] if r["seconds"] is None or r["status"] == "FAIL" else f"{r['seconds']:.2f}"
            cells.append(f"{cell:>{col}}")
        print(f"{t:<{tw}}  " + "  ".join(cells))
    print("\nfigures (as the guest measures them)")
    for t in tests:
        rows = [(n, run["tests"][t]) for n, run in runs.items() if t in run["tests"]]
        if not any(r["notes"] or r.get("reason") for _, r in rows):
            continue
        print(t)
        for n, r in rows:
            for note in r["notes"] + ([f"FAIL: {r['reason']}"] if r.get("reason") else []):
                print(f"  {n:<{width}}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
