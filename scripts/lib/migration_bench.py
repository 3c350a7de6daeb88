# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration figures (docs/migration.md §13, issue 35 item 6): one
move per row over a unix socket, TCG, embedded mode and (--mode vgpud or
both) with the vGPU held by vgpud, moving from one daemon to another. Rows: an idle guest
whose fill buffer covers most of its VRAM (so that few VRAM pages are
zero), at 128, 512 and 1024 MiB of VRAM; and a busy guest (the chain of
guest-tests/migration.cc: saxpy jobs and a fill of 16 MiB per batch) at
128 and 512 MiB. Prints a table to stderr and the JSON to stdout (or
--json FILE).
"""
import argparse
import json
import os
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import migration  # noqa: E402

VRAM_HEADROOM_MIB = 48  # what the driver's own buffers and the chain's x and y need
BUSY_FILL_MIB = 16


def rows(quick):
    idle = [128] if quick else [128, 512, 1024]
    busy = [128] if quick else [128, 512]
    out = [("idle", v, "migration_idle", v - VRAM_HEADROOM_MIB) for v in idle]
    out += [("busy", v, "migration_chain", BUSY_FILL_MIB) for v in busy]
    return out


def run_row(a, kind, vram, test, fill, work, mode):
    args = types.SimpleNamespace(qemu=a.qemu, kernel=a.kernel, initrd=a.initrd, dir=work, vram=vram,
                                 fill_mib=fill, guest_test=test, guest_s=a.guest_s, moves=1, settle_s=a.settle_s,
                                 downtime_ms=a.downtime_ms, bandwidth_mib=a.bandwidth_mib, device_args="",
                                 qemu_args="", compare_ram=False, cancel_first=False,
                                 daemons=2 if mode == "vgpud" else 0, daemon_moves="cross", vgpud=a.vgpud,
                                 vgpuctl=a.vgpuctl)
    r = migration.run(args)
    r["row"] = kind
    r["mode"] = mode
    return r


def table(results):
    head = ("row", "mode", "VRAM MiB", "downtime ms", "STOP->RESUME ms", "total ms", "MiB sent", "passes", "guest")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        m = r["moves"][0] if r["moves"] else {}
        verdict = "%d passed, %d failed" % (r["passed"], r["failed"]) if "error" not in r else "error"
        cells = (r["row"], r["mode"], r["vram_mib"], m.get("downtime_ms"), m.get("stop_to_resume_ms"), m.get("total_ms"),
                 "%.1f" % ((m.get("bytes") or 0) / 2**20), m.get("passes"), verdict)
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--qemu", required=True)
    p.add_argument("--kernel", required=True)
    p.add_argument("--initrd", required=True)
    p.add_argument("--json", help="write the JSON here instead of stdout")
    p.add_argument("--quick", action="store_true", help="one idle and one busy row at 128 MiB")
    p.add_argument("--guest-s", type=int, default=10)
    p.add_argument("--settle-s", type=float, default=2.0)
    p.add_argument("--downtime-ms", type=int, default=40)
    p.add_argument("--bandwidth-mib", type=int, default=10240)
    p.add_argument("--mode", choices=["embedded", "vgpud", "both"], default="embedded",
                   help="vgpud: the vGPU held by vgpud, moved from one daemon to another")
    p.add_argument("--vgpud", help="the vgpud binary (--mode vgpud or both)")
    p.add_argument("--vgpuctl", help="the vgpuctl binary (--mode vgpud or both)")
    a = p.parse_args()
    if a.mode != "embedded" and not (a.vgpud and a.vgpuctl):
        p.error("--mode %s needs --vgpud and --vgpuctl" % a.mode)
    modes = ["embedded", "vgpud"] if a.mode == "both" else [a.mode]
    results = []
    for kind, vram, test, fill in rows(a.quick):
        for mode in modes:
            with tempfile.TemporaryDirectory(prefix="vgpu-migration-bench-") as work:
                r = run_row(a, kind, vram, test, fill, work, mode)
            results.append(r)
            print("==> migration-bench: %s %s %d MiB: %s" % (kind, mode, vram,
                                                             r["moves"][0] if r["moves"] else r.get("error")),
                  file=sys.stderr)
    out = {"accel": "tcg", "socket": "unix", "downtime_limit_ms": a.downtime_ms,
           "max_bandwidth_mib_s": a.bandwidth_mib, "load_average": os.getloadavg()[0], "rows": results}
    print(table(results), file=sys.stderr)
    text = json.dumps(out, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0 if all("error" not in r and r["failed"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
