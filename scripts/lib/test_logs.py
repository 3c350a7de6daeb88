#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Print the output of the failed tests of meson test logs.

    test_logs.py [--lines N] TESTLOG.JSON...

For each test program whose result is not OK in a meson-logs/testlog.json,
prints a header naming it, then its output: for a GoogleTest program the
blocks of the failed cases ("[ RUN ]" to "[  FAILED  ]") and of a case that
never finished (a crash or a timeout, with what followed it), otherwise all
of it; in either case at most the last N lines (default 200). Exits 0 when
it printed a failed test, 1 when it found none (or no log).
"""
import json
import sys

RUN = "[ RUN      ]"
OK = "[       OK ]"
FAILED = "[  FAILED  ]"
SKIPPED = "[  SKIPPED ]"


def failed_blocks(lines):
    """The lines of failed or unfinished GoogleTest cases; [] if none."""
    blocks, current = [], None
    for line in lines:
        if line.startswith(RUN):
            if current is not None:  # a case that never ended, then another began
                blocks.append(current)
            current = [line]
        elif current is not None:
            current.append(line)
            if line.startswith(OK) or line.startswith(SKIPPED):
                current = None
            elif line.startswith(FAILED):
                blocks.append(current)
                current = None
    if current is not None:  # died inside a case: keep what followed
        blocks.append(current)
    return [line for block in blocks for line in block]


def main(args):
    max_lines = 200
    if len(args) >= 2 and args[0] == "--lines":
        max_lines = int(args[1])
        args = args[2:]
    found = False
    for path in args:
        label = path.split("/")[-3] if path.count("/") >= 2 else path
        try:
            records = [json.loads(line) for line in open(path).read().splitlines() if line.strip()]
        except OSError:
            continue
        for rec in records:
            if rec.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
                continue
            found = True
            out = (rec.get("stdout") or "") + (rec.get("stderr") or "")
            lines = out.splitlines()
            blocks = failed_blocks(lines)
            shown, what = (blocks, "its failed cases") if blocks else (lines, "its output")
            if len(shown) > max_lines:
                cut = len(shown) - max_lines
                # Keep the name of the case the kept lines belong to.
                run = None
                if not shown[cut].startswith(RUN):
                    run = next((line for line in reversed(shown[:cut]) if line.startswith(RUN)), None)
                left_out = cut - (1 if run else 0)
                shown = ([run] if run else []) + ([f"[... {left_out} lines left out ...]"] if left_out else []) + shown[cut:]
                what = f"{what}, the last {max_lines} lines"
            full = path[: -len(".json")] + ".txt" if path.endswith(".json") else path
            print(f"---- {label}/{rec.get('name')}: {rec.get('result')}; {what} (full log: {full})")
            for line in shown:
                print(line)
            print(f"---- end of {label}/{rec.get('name')}")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
