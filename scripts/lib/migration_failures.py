# SPDX-License-Identifier: GPL-2.0-or-later
"""Moves that must fail and leave the source as it was (scripts/migration-test,
docs/migration.md §9): a move cancelled mid-stream, live and with the VM
stopped; in shared mode a destination whose vGPU refuses the image
(lazy-shadow=off); embedded, a destination told to fail its import
(x-fail-import=on). Each returns a note or raises RuntimeError."""
import subprocess
import time

import migration as m

HEARTBEAT = "    chain: "  # the guest chain's heartbeat line (one per second of guest time)


def stopped_digest(vm):
    """Stops vm and returns its vGPU's digest. A stop that lands between two
    pieces of divided work (the chain's spin) has no image yet (docs/migration.md
    M4) and names that; the VM then runs on and is stopped again, as a refused
    move is retried."""
    for _ in range(m.REFUSAL_RETRIES):
        vm.qmp.cmd("stop")
        try:
            return vm.qmp.cmd("qom-get", path=m.DEVICE_PATH, property="x-migration-digest")
        except RuntimeError as e:
            if "between pieces of divided work" not in str(e):
                raise
            vm.qmp.cmd("cont")
            time.sleep(m.RETRY_PAUSE_S)
    raise RuntimeError("the stopped VM was between pieces of divided work %d times" % m.REFUSAL_RETRIES)


CANCEL_BANDWIDTH = 32 << 20  # bytes/s: slow enough that the cancel lands mid-stream
CANCEL_AFTER_S = 0.5


def cancelled_move(args, src, n, stopped):
    """A move cancelled mid-stream: the source must be as it was (running,
    or stopped with the same digest). Returns a note or raises."""
    dst = m.start_destination(args, n)
    try:
        if stopped:
            before = stopped_digest(src)
        src.qmp.cmd("migrate-set-parameters", **{"max-bandwidth": CANCEL_BANDWIDTH})
        src.qmp.cmd("migrate", uri="unix:" + dst.sock)
        time.sleep(CANCEL_AFTER_S)
        if src.qmp.cmd("query-migrate").get("status") != "active":
            raise RuntimeError("the move to cancel was not in progress: %s" % src.qmp.cmd("query-migrate"))
        src.qmp.cmd("migrate_cancel")
        deadline = time.monotonic() + m.MIGRATE_TIMEOUT_S
        while src.qmp.cmd("query-migrate").get("status") != "cancelled":
            if time.monotonic() > deadline:
                raise RuntimeError("the cancel did not end the move")
            time.sleep(m.POLL_S)
        if stopped:
            after = src.qmp.cmd("qom-get", path=m.DEVICE_PATH, property="x-migration-digest")
            if after != before:
                raise RuntimeError("a cancelled move changed the stopped source's digest: %s -> %s" % (before, after))
            src.qmp.cmd("cont")
        status = src.qmp.cmd("query-status")["status"]
        if status != "running":
            raise RuntimeError("the source is %s after a cancelled move" % status)
        return "cancelled mid-stream (%s): the source runs on%s" % (
            "VM stopped" if stopped else "live", ", digest unchanged" if stopped else "")
    finally:
        dst.stop()


REFUSING_OPTION = "lazy-shadow"  # off on the destination: its vGPU refuses the source's image (on, the default)


def refused_import(args, src, n):
    """Shared mode: a destination whose vGPU refuses the state (lazy-shadow
    off against the source's on: the same PCI device, another vGPU). Through
    QEMU's return path the source's move fails, and it runs on holding its
    vGPU. A stop the source's own image refused (between two slices of the
    chain's spin) is tried again, as move() does. Returns a note or raises."""
    refusal = "has %s=on, this device %s=off" % (REFUSING_OPTION, REFUSING_OPTION)
    for _ in range(m.REFUSAL_RETRIES):
        saved = args.device_args
        args.device_args += ",%s=off" % REFUSING_OPTION
        dst = m.start_destination(args, n)
        args.device_args = saved
        try:
            info = m.start_migration(args, src, dst)
            if info["status"] != "failed":
                raise RuntimeError("a move to a destination that refuses the state ended %s" % info["status"])
            # A source that refused its own stop leaves the destination
            # waiting on the return path (QEMU 7.2): it is stopped, not awaited.
            source_refused = "between pieces of divided work" in info.get("error-desc", "")
            if not source_refused:
                try:
                    dst.proc.wait(m.MIGRATE_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    raise RuntimeError("the destination that refused the state did not exit")
            deadline = time.monotonic() + m.MIGRATE_TIMEOUT_S
            while src.qmp.cmd("query-status")["status"] != "running":
                if time.monotonic() > deadline:
                    raise RuntimeError("the source did not run again after the failed move")
                time.sleep(m.POLL_S)
        finally:
            dst.stop()
        why = dst.stderr()
        if refusal in why:
            break
        if not source_refused:
            raise RuntimeError("the destination's refusal is not in its log: %s (source: %s)" %
                               (why[-300:], info.get("error-desc", "no error-desc")))
        time.sleep(m.RETRY_PAUSE_S)
    else:
        raise RuntimeError("the source's stop was refused %d times" % m.REFUSAL_RETRIES)
    name = "qemu-%d" % src.proc.pid
    state = args.daemon_set.states().get(name)
    if state not in ("running", "outgoing"):
        raise RuntimeError("after the refused import the source's daemon shows %s as %s" % (name, state))
    return "refused import on daemon %s: the source's move %s, it runs on, %s %s on its daemon" % (
        args.daemon_set.socket(n)[-11:], info["status"], name, state)


def heartbeats(vm):
    return vm.text().count("\n" + HEARTBEAT)


def failed_import(args, src, n):
    """Embedded: a destination with x-fail-import=on hands its backend the
    image cut by a byte; the backend refuses it and the load fails. The
    source is stopped first (its digest taken), moved with QEMU's return
    path on (without it the source cannot learn of the failure and ends
    'completed'), and must then have the same digest, run again when told,
    and its guest's chain go on (a new heartbeat)."""
    before = stopped_digest(src)
    beats = heartbeats(src)
    saved = args.device_args
    args.device_args += ",x-fail-import=on"
    dst = m.start_destination(args, n)
    args.device_args = saved
    try:
        for vm in (src, dst):
            vm.qmp.cmd("migrate-set-capabilities", capabilities=[{"capability": "return-path", "state": True}])
        info = m.start_migration(args, src, dst)
        if info["status"] != "failed":
            raise RuntimeError("a move to a destination with x-fail-import=on ended %s" % info["status"])
        try:
            dst.proc.wait(m.MIGRATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the destination that failed its import did not exit")
    finally:
        dst.stop()
    src.qmp.cmd("migrate-set-capabilities", capabilities=[{"capability": "return-path", "state": False}])
    why = dst.stderr()
    if "vgpu: x-fail-import: the image is cut" not in why:
        raise RuntimeError("the destination's log does not name x-fail-import: %s" % why[-300:])
    after = src.qmp.cmd("qom-get", path=m.DEVICE_PATH, property="x-migration-digest")
    if after != before:
        raise RuntimeError("a failed import changed the stopped source's digest: %s -> %s" % (before, after))
    state = src.qmp.cmd("query-status")["status"]
    src.qmp.cmd("cont")
    deadline = time.monotonic() + m.MIGRATE_TIMEOUT_S
    while src.qmp.cmd("query-status")["status"] != "running" or heartbeats(src) <= beats:
        if time.monotonic() > deadline:
            raise RuntimeError("after the failed import the source's chain did not go on (%d heartbeats, %s)" %
                               (heartbeats(src), src.qmp.cmd("query-status")["status"]))
        time.sleep(m.POLL_S)
    return "failed import (x-fail-import=on): the move %s, the source (%s) has its digest unchanged and its chain " \
           "goes on (%d heartbeats, was %d)" % (info["status"], state, heartbeats(src), beats)


def cancels(args, src):
    """The cancels of --cancel-first, then the refused import (move 102:
    to the other daemon with "pairs")."""
    notes = [cancelled_move(args, src, 100 + i, stopped) for i, stopped in enumerate((False, True))]
    notes.append(refused_import(args, src, 102) if args.daemon_set else failed_import(args, src, 102))
    return notes
