#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The vgpu device's QEMU conventions, without booting a guest
(scripts/qemu-device-test runs it; docs/qemu.md, "Device properties"):
-device vgpu,help (a description and a default for every property),
refusals in the user's units, warnings for settings that do nothing, and
QMP qom-get's effective values and structured counters, embedded and on a
vgpud daemon. Each QEMU is started with -S (realize runs, the guest does
not) and stopped at once.

  qemu_device_test.py --qemu CMD --vgpud PATH --option-table PATH [--summary-file F]

--option-table is build/common/vgpu-option-table: the option table
(include/vgpu/option_table.h) as JSON, which QEMU's help lines and
refusals must match (as vgpud's and the C API's do, tests/option_table_test.cc).

Prints one "PASS name" or "FAIL name: why" line per check, then
"N passed, N failed"; exits 0 only when none failed.
"""
import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

QEMU_TIMEOUT_S = 30
MACHINE = ["-machine", "pc", "-accel", "tcg", "-S", "-nodefaults", "-display", "none", "-m", "256M"]
PROPERTIES = ["vram", "channels", "mode", "bar-remap", "lazy-shadow", "pv", "scheduler", "weight",
              "x-counters-file", "socket", "vm-name", "turn-ms", "max-gpu-ms", "slice-blocks",
              "ring-ahead", "watchdog-ms", "backend", "worker-device", "worker-binary", "daemon-timeout-ms",
              "counters", "x-migration-digest", "x-fail-import"]
#QEMU 's own, from its PCI device class (descriptions are QEMU' s business).
PCI_PROPERTIES = ["acpi-index", "addr", "failover_pair_id", "multifunction", "rombar", "romfile", "romsize",
                  "x-pcie-extcap-init", "x-pcie-lnksta-dllla"]


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, why=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {why}")
        sys.stdout.flush()


def run_qemu(qemu, device, extra=()):
    """QEMU with one vgpu device, stopped by 'quit' on its QMP monitor.
    Returns (exit status, stderr, {property: qom-get value})."""
    cmd = qemu + MACHINE + ["-qmp", "stdio"] + list(extra) + ["-device", device]
    queries = ["scheduler", "backend", "vm-name", "weight", "vram", "counters"]
    lines = [{"execute": "qmp_capabilities"}]
    lines += [{
  "execute" : "qom-get", "arguments" : {"path" : "/machine/peripheral/vgpu0", "property" : p}, "id" : p}
              for p in queries]
    lines.append({"execute": "quit"})
    stdin = "".join(json.dumps(x) + "\n" for x in lines)
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=QEMU_TIMEOUT_S)
    values = {}
    for line in p.stdout.splitlines():
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "id" in reply and "return" in reply:
            values[reply["id"]] = reply["return"]
    return p.returncode, p.stderr, values


def help_rows(qemu):
    """QEMU's exit status for -device vgpu,help, and its property lines by name."""
    p = subprocess.run(qemu + ["-device", "vgpu,help"], capture_output=True, text=True, timeout=QEMU_TIMEOUT_S)
    rows = {}
    for line in p.stdout.splitlines():
        line = line.strip()
        if "=<" in line:
            rows[line.split("=<", 1)[0]] = line
    return p.returncode, rows


def check_started(c, qemu, what, cases, refused):
    """Each case (name, device, message): QEMU with that device refuses to
    start (refused) or starts, and says the message on stderr."""
    for name, device, message in cases:
        rc, err, _ = run_qemu(qemu, device)
        c.check(f"{what}: {name}", (rc != 0) == refused and message in err, f"exit {rc}, stderr: {err.strip()[-300:]}")


def check_help(c, qemu):
    returncode, rows = help_rows(qemu)
    c.check("help lists every property", returncode == 0 and sorted(rows) == sorted(PROPERTIES + PCI_PROPERTIES),
            f"exit {returncode}, listed {sorted(rows)}")
    undescribed = [n for n in PROPERTIES if " - " not in rows.get(n, "") or len(rows[n].split(" - ", 1)[1]) < 10]
    c.check("help: every property has a description", not undescribed, f"without: {undescribed}")
    for name, default in [("scheduler", '"band"'), ("backend", '"model"'), ("mode", '"passthrough"'),
                          ("vram", "268435456"), ("weight", "10"), ("channels", "16"),
                          ("daemon-timeout-ms", "5000")]:
        row = rows.get(name, "")
        c.check(f"help: {name} shows its default {default}", f"(default: {default})" in row, row)
    row = rows.get("daemon-timeout-ms", "")
    c.check("help: daemon-timeout-ms says its bounds and VGPUD_TIMEOUT",
            "1 to 3600000" in row and "VGPUD_TIMEOUT" in row, row)
    c.check("help: counters is a structured value", "counters=<any>" in rows.get("counters", ""),
            rows.get("counters", ""))


def check_refusals(c, qemu):
    cases = [
        ("vram=100000M", "vgpu,id=vgpu0,vram=100000M", "vram: 100000 MiB is above the maximum 4096 MiB"),
        ("vram=3M", "vgpu,id=vgpu0,vram=3M", "vram: 3 MiB is below the minimum 64 MiB"),
        ("vm-name of 44 characters", "vgpu,id=vgpu0,mode=fv,vm-name=" + "a" * 44,
         "vm-name: '" + "a" * 44 + "' is 44 characters; the limit is 31"),
        ("daemon-timeout-ms=0", "vgpu,id=vgpu0,mode=fv,daemon-timeout-ms=0",
         "daemon-timeout-ms: 0 ms is below the minimum 1 ms"),
        ("daemon-timeout-ms=3600001", "vgpu,id=vgpu0,mode=fv,daemon-timeout-ms=3600001",
         "daemon-timeout-ms: 3600001 ms is above the maximum 3600000 ms"),
    ]
    check_started(c, qemu, "refused", cases, refused=True)


def check_table(c, qemu, table):
    """Every row of the option table that is a property: its help line is
    the table's, and a number one past its maximum is refused with the
    table's message (the one vgpud and the benches give)."""
    _, lines = help_rows(qemu)
    for row in table:
        name = row["name"]
        if name not in PROPERTIES:
            continue
        want = (row["device"] + ": " if row["device"] else "") + row["help"]
        c.check(f"table: {name}'s help is the table's", want in lines.get(name, ""),
                f"want {want!r}, QEMU has {lines.get(name, '')!r}")
        if row["type"] not in ("count", "size"):
            continue
        value = str(row["max"] + 1) + ("M" if row["type"] == "size" else "")
        rc, err, _ = run_qemu(qemu, f"vgpu,id=vgpu0,mode=fv,{name}={value}")
        c.check(f"table: {name}={value} refused with the table's message",
                rc != 0 and row["above_max_message"] in err, f"exit {rc}, stderr: {err.strip()[-300:]}")


def check_warnings(c, qemu):
    cases = [
        ("vm-name without socket", "vgpu,id=vgpu0,mode=fv,vm-name=web1",
         "warning: vgpu0: vm-name=web1 does nothing without socket"),
        ("weight without socket", "vgpu,id=vgpu0,mode=fv,weight=30",
         "warning: vgpu0: weight=30 does nothing without socket"),
        ("scheduler with passthrough", "vgpu,id=vgpu0,scheduler=fifo",
         "warning: vgpu0: scheduler=fifo does nothing with mode=passthrough"),
        ("daemon-timeout-ms without socket", "vgpu,id=vgpu0,mode=fv,daemon-timeout-ms=500",
         "warning: vgpu0: daemon-timeout-ms=500 does nothing without socket"),
    ]
    check_started(c, qemu, "warned", cases, refused=False)
    rc, err, _ = run_qemu(qemu, "vgpu,id=vgpu0,mode=fv,scheduler=credit")
    c.check("no warning for a plain fv device", rc == 0 and "warning" not in err, f"exit {rc}, stderr: {err.strip()}")


def check_qom_embedded(c, qemu):
    rc, err, v = run_qemu(qemu, "vgpu,id=vgpu0,mode=fv")
    c.check("qom-get scheduler: the default, not \"\"", v.get("scheduler") == "band", f"{v.get('scheduler')!r} {err}")
    c.check("qom-get backend: the default", v.get("backend") == "model", repr(v.get("backend")))
    counters = v.get("counters")
    c.check("qom-get counters: an object, not a string",
            isinstance(counters, dict) and counters.get("backend") == "mediator" and "trapped_reads" in counters,
            repr(counters)[:200])
    rc, err, v = run_qemu(qemu, "vgpu,id=vgpu0,mode=fv,scheduler=credit")
    c.check("qom-get scheduler: the value given", v.get("scheduler") == "credit", repr(v.get("scheduler")))


def check_silent_peer(c, qemu):
    """A socket that accepts and never answers: realize gives up after
    daemon-timeout-ms, well before the 5 s default."""
    with tempfile.TemporaryDirectory(prefix="vgpu-qemu-device-") as tmp:
        path = os.path.join(tmp, "silent.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
            silent.bind(path)
            silent.listen(4)
            start = time.monotonic()
            rc, err, _ = run_qemu(qemu, f"vgpu,id=vgpu0,mode=fv,socket={path},daemon-timeout-ms=300")
            took = time.monotonic() - start
        c.check("daemon-timeout-ms=300: a silent peer fails realize in 0.3 s",
                rc != 0 and f"vgpud at {path} did not answer in 0.3 s" in err and took < 4,
                f"exit {rc} after {took:.1f} s, stderr: {err.strip()[-300:]}")


def start_daemon(vgpud, sock, scheduler, log):
    d = subprocess.Popen([vgpud, "--socket", sock, "--vram", "512M", "--max-vms", "2", "--scheduler", scheduler],
                         stderr=log)
    for _ in range(100):
        if os.path.exists(sock + ".ctl"):
            return d
        time.sleep(0.1)
    return d


def check_daemon(c, qemu, vgpud):
    with tempfile.TemporaryDirectory(prefix="vgpu-qemu-device-") as tmp:
        sock = os.path.join(tmp, "vgpud.sock")
        with open(os.path.join(tmp, "vgpud.log"), "w") as log:
            d = start_daemon(vgpud, sock, "fifo", log)
            try:
                rc, err, v = run_qemu(qemu, f"vgpu,id=vgpu0,mode=fv,socket={sock},vm-name=web1,scheduler=band")
                c.check("warned: a scheduler the daemon does not run",
                        rc == 0 and f"scheduler=band does nothing: the vgpud daemon at {sock} schedules every VM "
                        "with fifo" in err, f"exit {rc}, stderr: {err.strip()[-300:]}")
                c.check("qom-get scheduler with socket: the daemon's", v.get("scheduler") == "fifo",
                        repr(v.get("scheduler")))
                c.check("qom-get vm-name with socket: the name at the daemon", v.get("vm-name") == "web1",
                        repr(v.get("vm-name")))
                c.check("qom-get counters with socket: the daemon backend's",
                        isinstance(v.get("counters"), dict) and v["counters"].get("backend") == "daemon",
                        repr(v.get("counters"))[:200])
                rc, err, v = run_qemu(qemu, f"vgpu,id=vgpu0,mode=fv,socket={sock}")
                c.check("no warning when the scheduler is not given", rc == 0 and "warning" not in err,
                        f"exit {rc}, stderr: {err.strip()}")
                c.check("qom-get vm-name with socket: qemu-PID by default",
                        str(v.get("vm-name", "")).startswith("qemu-"), repr(v.get("vm-name")))
            finally:
                d.terminate()
                d.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qemu", required=True, help="the QEMU command (words)")
    ap.add_argument("--vgpud", required=True)
    ap.add_argument("--option-table", required=True, help="build/common/vgpu-option-table")
    ap.add_argument("--summary-file")
    a = ap.parse_args()
    qemu = shlex.split(a.qemu)
    c = Checks()
    for part in (check_help, check_refusals, check_warnings, check_qom_embedded, check_silent_peer):
        part(c, qemu)
    table = json.loads(subprocess.run([a.option_table], capture_output=True, text=True, check=True).stdout)
    check_table(c, qemu, table)
    check_daemon(c, qemu, a.vgpud)
    summary = f"{c.passed} passed, {c.failed} failed"
    print(summary)
    if a.summary_file:
        with open(a.summary_file, "w") as f:
            f.write(summary + "\n")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
