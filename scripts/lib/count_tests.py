#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Count GoogleTest cases across meson test logs, plus guest test runs.

Each plain argument is a meson-logs/testlog.json. For every test program
the gtest summary lines give the passed and failed case counts; a program
that crashed or timed out without a summary counts as one failure.
Each "--guest-summary FILE" names a file scripts/run-guest wrote with the
guest's "N passed, N failed" line; those counts are added, and a missing
file or line counts as one failure. Each "--failed TEXT" is one failure
found outside the test programs (scripts/test names it). Prints the
failures by name, then "N passed, N failed".
"""
import json
import re
import sys

PASSED = re.compile(r"^\[  PASSED  \] (\d+) tests?\.", re.M)
FAILED = re.compile(r"^\[  FAILED  \] (\d+) tests?, listed below", re.M)
FAILED_NAME = re.compile(r"^\[  FAILED  \] (\S+)(?: \(\d+ ms\))?$", re.M)


GUEST_SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)


def count_guest(path):
    """(passed, failed) of one guest run's summary file."""
    try:
        m = GUEST_SUMMARY.search(open(path).read())
    except OSError as e:
        print(f"FAIL guest run {path}: no summary ({e.strerror})")
        return 0, 1
    if m is None:
        print(f"FAIL guest run {path}: no 'N passed, N failed' line")
        return 0, 1
    p, f = int(m.group(1)), int(m.group(2))
    if f:
        print(f"FAIL guest run {path}: {f} failed")
    return p, f


def main(args):
    passed = failed = 0
    paths = []
    while args:
        if args[0] == "--guest-summary" and len(args) > 1:
            p, f = count_guest(args[1])
            passed += p
            failed += f
            args = args[2:]
        elif args[0] == "--failed" and len(args) > 1:
            print(f"FAIL {args[1]}")
            failed += 1
            args = args[2:]
        else:
            paths.append(args[0])
            args = args[1:]
    for path in paths:
        label = path.split("/")[-3] if path.count("/") >= 2 else path
        try:
            lines = open(path).read().splitlines()
        except OSError as e:
            print(f"FAIL {label}: no test log ({e.strerror})")
            failed += 1
            continue
        for line in lines:
            rec = json.loads(line)
            out = rec.get("stdout") or ""
            p = PASSED.search(out)
            f = FAILED.search(out)
            ok = rec.get("result") == "OK"
            if p is None and f is None:
                if ok:
                    passed += 1  # a non-gtest test program that succeeded
                else:
                    print(f"FAIL {label}/{rec.get('name')}: {rec.get('result')}")
                    failed += 1
                continue
            passed += int(p.group(1)) if p else 0
            n_failed = int(f.group(1)) if f else 0
            if n_failed:
                for name in sorted(set(FAILED_NAME.findall(out))):
                    print(f"FAIL {label}/{rec.get('name')}: {name}")
            elif not ok:
                print(f"FAIL {label}/{rec.get('name')}: {rec.get('result')} after its tests passed")
                n_failed = 1
            failed += n_failed
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main(sys.argv[1:])
