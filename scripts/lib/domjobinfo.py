#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`virsh domjobinfo --completed` (on stdin) as one line of JSON: the
figures of a finished migration that scripts/libvirt-test reports."""
import json
import re
import sys

UNITS = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}


def main():
    fields = {}
    for line in sys.stdin:
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if fields.get("Job type") != "Completed":
        sys.exit("domjobinfo.py: no completed job in virsh's output (%s)" % fields.get("Job type", "nothing"))

    def number(key):
        m = re.match(r"([0-9.]+)\s*(\S*)", fields.get(key, ""))
        if not m:
            sys.exit("domjobinfo.py: virsh printed no '%s'" % key)
        return float(m.group(1)) * UNITS.get(m.group(2), 1)

    print(json.dumps({
        "operation": fields.get("Operation"),
        "downtime_ms": number("Total downtime"),
        "total_ms": number("Time elapsed"),
        "mib": round(number("Data processed"), 1),
        "iterations": int(number("Iteration")),
        "mib_per_s": round(number("Memory bandwidth"), 1),
    }))


if __name__ == "__main__":
    main()
