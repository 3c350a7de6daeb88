# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a guest with a vgpu device between two QEMUs on this
host (scripts/migration-test, scripts/migration-bench; docs/migration.md).

One run: boot a guest whose guest program (guest-tests/migration.cc) runs
GPU work for a while, move it over a unix socket to a QEMU started with
-incoming (MOVES times: A->B->A...), and wait for the guest's own verdict
on the last QEMU's console. Prints one JSON object: the verdict and, per
move, QEMU's figures (downtime, total time, bytes, passes) and the STOP to
RESUME gap from the two QMP event streams.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time

POLL_S = 0.05
BOOT_TIMEOUT_S = 120
MIGRATE_TIMEOUT_S = 120
FREED_TIMEOUT_S = 10
REFUSAL_RETRIES = 20      # a move refused by the vGPU's image (say, a user launch between pieces) is tried again
# A built-in launch between slices travels (image version 3): a refusal
# naming it is a failure, never retried.
BETWEEN_PIECES = "between pieces of divided work"
RETRY_PAUSE_S = 0.3
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$")
GUEST_RAM = "256M"
DAEMON_VRAM_MIN_MIB = 1024  # each vgpud's VRAM: at least this, and room for two VMs and the daemon's reserve
DAEMON_RESERVE_MIB = 512
DEVICE_PATH = "/machine/peripheral/vgpu0"


class Qmp:
    """A QMP client on a unix socket; events are kept with their host time."""

    def __init__(self, path, timeout_s=BOOT_TIMEOUT_S):
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise RuntimeError("no QMP socket at " + path)
                time.sleep(POLL_S)
        self.file = self.sock.makefile("rw")
        self.events = []
        self._read()  # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        try:
            line = self.file.readline()
        except OSError:
            line = ""
        if not line:
            raise RuntimeError("QMP connection closed")
        msg = json.loads(line)
        if "event" in msg:
            self.events.append((time.time(), msg))
        return msg

    def cmd(self, name, **args):
        try:
            self.file.write(json.dumps({"execute": name, "arguments": args}) + "\n")
            self.file.flush()
        except OSError as e:
            raise RuntimeError("%s: QMP connection lost (%s): QEMU exited" % (name, e))
        while True:
            msg = self._read()
            if "return" in msg:
                return msg["return"]
            if "error" in msg:
                raise RuntimeError("%s: %s" % (name, msg["error"].get("desc")))

    def event_time(self, name):
        """When QEMU sent the first event of that name (its own timestamp)."""
        for _, msg in self.events:
            if msg["event"] == name:
                ts = msg["timestamp"]
                return ts["seconds"] + ts["microseconds"] / 1e6
        return None


class Daemons:
    """Shared mode (docs/migration.md §7): N vgpud processes of the run. The
    VM of move n uses daemon n % N ("cross": with two, each move changes
    daemon), or daemon (n // 2) % N ("pairs": with two, moves alternate
    between one daemon and the other: 0 -> 0 -> 1 -> 1 -> 0 ...)."""

    def __init__(self, args):
        self.args = args
        self.procs, self.sockets, self.logs = [], [], []
        for k in range(args.daemons):
            sock = os.path.join(args.dir, "vgpud%d.sock" % k)
            log = open(os.path.join(args.dir, "vgpud%d.log" % k), "w")
            vram = "%dM" % max(DAEMON_VRAM_MIN_MIB, 2 * args.vram + DAEMON_RESERVE_MIB)
            self.procs.append(subprocess.Popen([args.vgpud, "--socket", sock, "--vram", vram, "--max-vms", "4"],
                                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            self.sockets.append(sock)
            self.logs.append(log)
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while not all(os.path.exists(p + ".ctl") for p in self.sockets):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError("vgpud did not start: " + self.log_text(0)[-300:])
            time.sleep(POLL_S)

    def socket(self, n):
        k = n // 2 if self.args.daemon_moves == "pairs" else n
        return self.sockets[k % len(self.sockets)]

    def log_text(self, k):
        with open(self.logs[k].name, errors="replace") as f:
            return f.read()

    def stats(self):
        return [json.loads(subprocess.run([self.args.vgpuctl, "--socket", sock + ".ctl", "stats"],
                                          capture_output=True, text=True, check=True).stdout)
                for sock in self.sockets]

    def vms(self):
        """The VMs each daemon holds now (vgpuctl stats), and its VRAM assigned."""
        return [([vm["name"] for vm in st["vms"]], st["vram_assigned_bytes"]) for st in self.stats()]

    def states(self):
        """Each VM held, by name: its migration state (vgpuctl stats)."""
        return {vm["name"]: vm["state"] for st in self.stats() for vm in st["vms"]}

    def stop(self):
        for proc, log in zip(self.procs, self.logs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()


def vram_inodes(pid):
    """The inodes of the vgpud VRAM memfds a QEMU holds (its RAMBlock's and the client's)."""
    out = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, fd)).startswith("/memfd:vgpu-vram-partition"):
                out.add(os.stat(os.path.join(fd_dir, fd)).st_ino)
        except OSError:
            pass
    return out


class Vm:
    """One QEMU of the run."""

    def __init__(self, args, tag, incoming=None, paused=False, n=0):
        self.tag = tag
        self.console = os.path.join(args.dir, tag + ".console")
        qmp_path = os.path.join(args.dir, tag + ".qmp")
        append = ("console=ttyS0 quiet panic=-1 no_timer_check vgpu_vram_mib=%d vgpu_tests=%s vgpu_chain_s=%d vgpu_chain_mib=%d"
                  % (args.vram, args.guest_test, args.guest_s, args.fill_mib))
        if getattr(args, "spin_ms", 0):
            append += " vgpu_chain_spin_ms=%d" % args.spin_ms
        if getattr(args, "beat_ms", 0):
            append += " vgpu_chain_beat_ms=%d" % args.beat_ms
        cmd = [args.qemu, "-accel", "tcg", "-m", GUEST_RAM, "-display", "none", "-vga", "none",
               "-nic", "none", "-no-reboot", "-monitor", "none",
               "-serial", "file:" + self.console, "-qmp", "unix:%s,server=on,wait=off" % qmp_path,
               "-kernel", args.kernel, "-initrd", args.initrd, "-append", append,
               "-device", "vgpu,id=vgpu0,vram=%dM,mode=fv%s" % (args.vram, args.device_args)]
        if getattr(args, "daemon_set", None):
            cmd[-1] += ",socket=" + args.daemon_set.socket(n)
        cmd += args.qemu_args.split()
        if incoming:
            cmd += ["-incoming", incoming]
        if paused:
            cmd += ["-S"]
        self.log = open(os.path.join(args.dir, tag + ".log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.qmp = Qmp(qmp_path)

    def text(self):
        try:
            with open(self.console, errors="replace") as f:
                return f.read().replace("\r", "")
        except OSError:
            return ""

    def wait_console(self, pattern, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if re.search(pattern, self.text(), re.M):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(POLL_S)
        return False

    def stderr(self):
        with open(self.log.name, errors="replace") as f:
            return f.read().strip()

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.qmp.cmd("quit")
            except (RuntimeError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def start_migration(args, src, dst):
    """Starts the move of src into dst and waits for its end: QEMU's
    query-migrate. Shared mode turns on the return path (as libvirt does),
    so that the source learns that the destination loaded the state."""
    src.qmp.events.clear()  # a refused move's STOP is not this one's
    src.qmp.cmd("migrate-set-parameters", **{"downtime-limit": args.downtime_ms,
                                              "max-bandwidth": args.bandwidth_mib << 20})
    if getattr(args, "daemon_set", None):
        for vm in (src, dst):
            vm.qmp.cmd("migrate-set-capabilities", capabilities=[{"capability": "return-path", "state": True}])
    src.qmp.cmd("migrate", uri="unix:" + dst.sock)
    deadline = time.monotonic() + MIGRATE_TIMEOUT_S
    while True:
        info = src.qmp.cmd("query-migrate")
        if info.get("status") in ("completed", "failed", "cancelled"):
            return info
        if time.monotonic() > deadline:
            src.qmp.cmd("migrate_cancel")
            raise RuntimeError("the migration did not end within %d s" % MIGRATE_TIMEOUT_S)
        time.sleep(POLL_S)


def source_freed(daemons, src):
    """Shared mode: the source's daemon freed its vGPU when the move
    completed (MIGRATED), while the source QEMU still runs. Returns the ms
    from completion until vgpuctl stopped listing it."""
    name, start = "qemu-%d" % src.proc.pid, time.monotonic()
    while any(name in names for names, _ in daemons.vms()):
        if time.monotonic() - start > FREED_TIMEOUT_S:
            raise RuntimeError("the source's daemon still holds %s %d s after the move" % (name, FREED_TIMEOUT_S))
        time.sleep(POLL_S)
    freed_ms = round((time.monotonic() - start) * 1000, 1)
    line = "vm %s: migrated: its vGPU is freed" % name
    if src.proc.poll() is not None or not any(line in daemons.log_text(k) for k in range(len(daemons.sockets))):
        raise RuntimeError("%s was not freed by MIGRATED while its QEMU ran (no '%s')" % (name, line))
    return freed_ms


def migrate(args, src, dst):
    """One move of src into dst; returns QEMU's figures, or raises with the
    reason the migration failed."""
    info = start_migration(args, src, dst)
    if info["status"] != "completed":
        raise RuntimeError(info.get("error-desc", info["status"]))
    inodes = freed_ms = None
    if getattr(args, "daemon_set", None):
        inodes = [sorted(vram_inodes(vm.proc.pid)) for vm in (src, dst)]
        if not inodes[0] or not inodes[1] or set(inodes[0]) & set(inodes[1]):
            raise RuntimeError("the two QEMUs' VRAM memfds are not two different files: %s" % inodes)
        freed_ms = source_freed(args.daemon_set, src)
    moved_in = None
    if args.compare_ram:
        compare_ram(args, src, dst)
        # Before it runs: launches the destination's import took up between
        # two pieces (a stop inside the chain's spin).
        moved_in = launches_moved_in(args, dst)
        dst.qmp.cmd("cont")
    deadline = time.monotonic() + BOOT_TIMEOUT_S
    while dst.qmp.cmd("query-status")["status"] != "running":
        if time.monotonic() > deadline or dst.proc.poll() is not None:
            raise RuntimeError("the destination did not run after the move: " + dst.stderr())
        time.sleep(POLL_S)
    ram = info.get("ram", {})
    stop_t, resume_t = src.qmp.event_time("STOP"), dst.qmp.event_time("RESUME")
    return {
        "downtime_ms": info.get("downtime"),
        "total_ms": info.get("total-time"),
        "setup_ms": info.get("setup-time"),
        "bytes": ram.get("transferred"),
        "passes": ram.get("dirty-sync-count"),
        "mbps": ram.get("mbps"),
        "stop_to_resume_ms": round((resume_t - stop_t) * 1000, 1) if stop_t and resume_t else None,
        "stop_t": stop_t,  # the source's STOP event, host wall clock
        "vram_inodes": inodes,
        "source_freed_ms": freed_ms,
        "launches_moved_in": moved_in,
    }


def launches_moved_in(args, dst):
    """The launches the destination's import took up between two pieces: its
    device's counters (embedded), or its VM's at its daemon (vgpuctl stats)."""
    if getattr(args, "daemon_set", None):
        name = "qemu-%d" % dst.proc.pid
        vms = [vm for st in args.daemon_set.stats() for vm in st["vms"] if vm["name"] == name]
        return vms[0].get("counters", {}).get("launches_moved_in") if vms else None
    counters = dst.qmp.cmd("qom-get", path=DEVICE_PATH, property="counters")
    return counters.get("launches_moved_in") if isinstance(counters, dict) else None


def compare_ram(args, src, dst):
    """The guest's RAM on the stopped source and the paused destination,
    page by page (4 KiB), then the vGPU's x-migration-digest (VRAM and
    device image)."""
    while dst.qmp.cmd("query-status")["status"] == "inmigrate":
        time.sleep(POLL_S)
    size = int(GUEST_RAM[:-1]) << 20
    paths = []
    for vm in (src, dst):
        path = os.path.join(args.dir, vm.tag + ".ram")
        vm.qmp.cmd("pmemsave", val=0, size=size, filename=path)
        paths.append(path)
    with open(paths[0], "rb") as a, open(paths[1], "rb") as b:
        pages = [i for i in range(size >> 12) if a.read(4096) != b.read(4096)]
    if pages:
        raise RuntimeError("guest RAM differs after the move in %d pages, first %s" %
                           (len(pages), [hex(p << 12) for p in pages[:8]]))
    digests = [vm.qmp.cmd("qom-get", path=DEVICE_PATH, property="x-migration-digest") for vm in (src, dst)]
    if digests[0] != digests[1]:
        raise RuntimeError("the vGPU's digest differs after the move: source %s, destination %s" % tuple(digests))


def start_destination(args, n):
    sock = os.path.join(args.dir, "move%d.sock" % n)
    dst = Vm(args, "vm%d" % n, incoming="unix:" + sock, paused=args.compare_ram, n=n)
    dst.sock = sock
    return dst


def move(args, src, n, moves):
    """Moves src to a new QEMU, retrying a move the vGPU refused."""
    refusals = []
    for _ in range(REFUSAL_RETRIES):
        dst = start_destination(args, n)
        try:
            figures = migrate(args, src, dst)
            figures["refused_before"] = refusals
            moves.append(figures)
            return dst
        except RuntimeError as e:
            dst.stop()
            reason = str(e)
            if "vgpu" not in reason or dst.proc.poll() is not None and src.proc.poll() is not None:
                raise RuntimeError("move %d: %s (source: %s; destination: %s)" %
                                   (n, reason, src.stderr()[-300:], dst.stderr()[-300:]))
            if BETWEEN_PIECES in reason:
                raise RuntimeError("move %d refused a stop between two pieces of a launch: %s" % (n, reason))
            refusals.append(reason)
            # The source runs on; wait for it to run again before the retry.
            deadline = time.monotonic() + MIGRATE_TIMEOUT_S
            while src.qmp.cmd("query-status")["status"] != "running":
                if time.monotonic() > deadline:
                    raise RuntimeError("move %d: %s; the source did not run again" % (n, reason))
                time.sleep(POLL_S)
            time.sleep(RETRY_PAUSE_S)
    raise RuntimeError("move %d refused %d times: %s" % (n, len(refusals), refusals[-1]))


def refusals(args):
    """What cannot move is refused with a message naming why, and the VM
    runs on: pass-through keeps a blocker; x-ignore-shared would skip VRAM.
    Returns [(check, ok, detail)]."""
    out = []
    cases = [("pass-through keeps its blocker", ",mode=passthrough", [], "migration needs mode=fv"),
             ("x-ignore-shared is refused", "", [{"capability": "x-ignore-shared", "state": True}],
              "x-ignore-shared would skip VRAM")]
    for name, device, caps, message in cases:
        saved = args.device_args
        args.device_args = device
        vm = Vm(args, "refusal", paused=True)
        args.device_args = saved
        try:
            if caps:
                vm.qmp.cmd("migrate-set-capabilities", capabilities=caps)
            why = ""
            try:
                vm.qmp.cmd("migrate", uri="exec:cat >/dev/null")
                deadline = time.monotonic() + MIGRATE_TIMEOUT_S
                while time.monotonic() < deadline:
                    info = vm.qmp.cmd("query-migrate")
                    if info.get("status") in ("completed", "failed", "cancelled"):
                        break
                    time.sleep(POLL_S)
                why = info.get("error-desc", info.get("status", ""))
            except RuntimeError as e:
                why = str(e)
            out.append((name, message in why and vm.proc.poll() is None, why))
        finally:
            vm.stop()
    return out


def run(args):
    result = {"guest_test": args.guest_test, "vram_mib": args.vram, "fill_mib": args.fill_mib,
              "downtime_limit_ms": args.downtime_ms, "moves": [], "passed": 0, "failed": 1}
    args.daemon_set = Daemons(args) if args.daemons else None
    vms = []
    try:
        vms.append(Vm(args, "vm0"))
        if not vms[0].wait_console(r"^    (chain|idle): ", BOOT_TIMEOUT_S):
            raise RuntimeError("the guest's GPU work did not start: " + vms[0].text()[-500:])
        time.sleep(args.settle_s)
        if args.cancel_first:
            import migration_failures  # it imports this module
            result["cancels"] = migration_failures.cancels(args, vms[0])
        for n in range(1, args.moves + 1):
            vms.append(move(args, vms[-1], n, result["moves"]))
            vms[-2].stop()
            time.sleep(args.settle_s)
        last = vms[-1]
        if args.daemon_set:  # now, while the last QEMU surely runs (the guest powers off after its verdict)
            check_daemons(args.daemon_set, last, result)
        if not last.wait_console(SUMMARY.pattern, args.guest_s + BOOT_TIMEOUT_S):
            raise RuntimeError("no summary line from the guest after the move: " + last.text()[-800:])
        text = last.text()
        m = [SUMMARY.match(line) for line in text.splitlines() if SUMMARY.match(line)][-1]
        result["passed"], result["failed"] = int(m.group(1)), int(m.group(2))
        result["fail_lines"] = [line for line in text.splitlines() if line.startswith("FAIL")]
        result["beats_after_move"] = len(re.findall(r"^    chain: ", text, re.M))
        result["guest_lines"] = [line for line in text.splitlines() if line.startswith(("PASS", "    "))][-3:]
    except (RuntimeError, subprocess.CalledProcessError) as e:
        result["error"] = str(e)
    finally:
        for vm in vms:
            vm.stop()
        if args.daemon_set:
            args.daemon_set.stop()
    return result


def check_daemons(daemons, last, result):
    """After the moves every source QEMU has quit: its daemon freed its vGPU
    (vgpuctl shows only the last QEMU's VM, and only its VRAM assigned)."""
    want = "qemu-%d" % last.proc.pid
    deadline = time.monotonic() + MIGRATE_TIMEOUT_S
    while True:
        held = daemons.vms()
        names = [name for names, _ in held for name in names]
        assigned = sum(bytes_ for _, bytes_ in held)
        if names == [want] and assigned == daemons.args.vram << 20:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("after the moves the daemons hold %s (%d bytes assigned), not only %s" %
                               (held, assigned, want))
        time.sleep(POLL_S)
    result["daemons"] = [{"vms": names_, "vram_assigned_bytes": bytes_} for names_, bytes_ in held]
    result["imports"] = sum(daemons.log_text(k).count(": state imported (") for k in range(len(daemons.sockets)))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--qemu", required=True)
    p.add_argument("--kernel", required=True)
    p.add_argument("--initrd", required=True)
    p.add_argument("--dir", required=True, help="consoles, QMP sockets and logs")
    p.add_argument("--vram", type=int, default=128, help="MiB")
    p.add_argument("--fill-mib", type=int, default=16, help="the guest's fill buffer")
    p.add_argument("--guest-test", default="migration_chain", choices=["migration_chain", "migration_idle"])
    p.add_argument("--guest-s", type=int, default=12, help="how long the guest's GPU program runs")
    p.add_argument("--moves", type=int, default=1)
    p.add_argument("--settle-s", type=float, default=1.0, help="run time before each move")
    p.add_argument("--downtime-ms", type=int, default=40)
    p.add_argument("--bandwidth-mib", type=int, default=10240, help="MiB/s (the socket is the real limit)")
    p.add_argument("--cancel-first", action="store_true",
                   help="before the moves, cancel one live and one of the stopped VM mid-stream")
    p.add_argument("--spin-ms", type=int, default=0, help="the chain's spin per batch (a launch in timed pieces)")
    p.add_argument("--compare-ram", action="store_true",
                   help="start the destination paused and compare the guest's RAM and the vGPU's digest "
                        "on both sides first")
    p.add_argument("--qemu-args", default="", help="more QEMU arguments (say, -trace enable=vgpu_migration_*)")
    p.add_argument("--device-args", default="", help="more vgpu properties, ',a=b,...'")
    p.add_argument("--refusals", action="store_true", help="only the refusal checks (no guest runs)")
    p.add_argument("--daemons", type=int, default=0, choices=[0, 1, 2],
                   help="shared mode: the vGPU is held by this many vgpud (1: every QEMU on one daemon; "
                        "2: each move changes daemon); 0: embedded")
    p.add_argument("--daemon-moves", choices=["cross", "pairs"], default="cross",
                   help="with --daemons 2: cross, every move changes daemon; pairs, moves alternate between "
                        "staying on a daemon and changing daemon (the cancels stay on the first)")
    p.add_argument("--vgpud", help="the vgpud binary (with --daemons)")
    p.add_argument("--vgpuctl", help="the vgpuctl binary (with --daemons)")
    args = p.parse_args()
    if args.refusals:
        checks = refusals(args)
        for name, ok, why in checks:
            print("%s %s (%s)" % ("PASS" if ok else "FAIL", name, why))
        return 0 if all(ok for _, ok, _ in checks) else 1
    result = run(args)
    print(json.dumps(result))
    return 0 if "error" not in result and result["failed"] == 0 and result["passed"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
