# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced after common.sh by scripts/libvirt-guest and scripts/libvirt-test:
# Debian 12's libvirt (9.0) set up to run our QEMU, and test-guest domains
# made from the templates in examples/libvirt/ (docs/libvirt.md).

LIBVIRT_URI=qemu:///system
LIBVIRT_DIR=$VGPU_CACHE/libvirt            # generated XML, serial logs, our libvirtd's pid and log
LIBVIRT_PIDFILE=/run/libvirt/vgpu-libvirtd.pid
LIBVIRT_QEMU_CONF=/etc/libvirt/qemu.conf
LIBVIRT_CONF_MARK="# written by vgpu scripts/lib/libvirt.sh"
LIBVIRT_STARTED=0                           # 1 when this script started libvirtd (it stops it)
LIBVIRT_DOMAINS=()                          # domains this script defined (removed at exit)
# A second libvirtd, "B", for virsh migrate on one machine (docs/migration.md
# §11): libvirt refuses a migration between two libvirtds of the same host
# UUID, and two privileged ones would share /run/libvirt, /etc/libvirt/qemu
# and /var/lib/libvirt. B runs in its own mount namespace, where those
# directories are bind mounts of folders under $LIBVIRT_B_DIR, with its own
# host_uuid; its socket is reached from here through that folder.
LIBVIRT_B_DIR=$VGPU_CACHE/libvirt-b
LIBVIRT_B_URI="qemu+unix:///system?socket=$LIBVIRT_B_DIR/run/libvirt-sock"
LIBVIRT_B_PIDFILE=$LIBVIRT_B_DIR/run/vgpu-libvirtd-b.pid
LIBVIRT_B_MOUNTS=(etc:/etc/libvirt run:/run/libvirt lib:/var/lib/libvirt cache:/var/cache/libvirt log:/var/log/libvirt)
LIBVIRT_B_STARTED=0                         # 1 when this script started B (it stops it)
LIBVIRT_B_USED=0                            # 1 once libvirt_up_b has answered

virsh_() { as_root virsh -q -c "$LIBVIRT_URI" "$@"; }
virsh_b() { as_root virsh -q -c "$LIBVIRT_B_URI" "$@"; }

# libvirt_qemu_conf: QEMU must run as root to read our build under $VGPU_CACHE
# (and to open /dev/kvm, which is root-only here), and without systemd
# there is no virtlogd, so QEMU's output goes to a file.
libvirt_qemu_conf() {
  if [[ -f $LIBVIRT_QEMU_CONF ]] && ! grep -qF "$LIBVIRT_CONF_MARK" "$LIBVIRT_QEMU_CONF"; then
    grep -Eq '^[[:space:]]*user[[:space:]]*=[[:space:]]*"root"' "$LIBVIRT_QEMU_CONF" ||
      die "$LIBVIRT_QEMU_CONF exists and does not run QEMU as root: our QEMU build lives under" \
        "$VGPU_CACHE, which the libvirt-qemu user cannot read; add user = \"root\" and group = \"root\"" \
        "to it and restart libvirtd (docs/libvirt.md, security notes)"
    return 0
  fi
  local conf
  conf="$LIBVIRT_CONF_MARK (docs/libvirt.md)
user = \"root\"
group = \"root\"
stdio_handler = \"file\""
  [[ -f $LIBVIRT_QEMU_CONF && $(cat "$LIBVIRT_QEMU_CONF") == "$conf" ]] && return 0
  say "writing $LIBVIRT_QEMU_CONF (QEMU runs as root, its output to a file)"
  as_root mkdir -p "$(dirname "$LIBVIRT_QEMU_CONF")"
  echo "$conf" | as_root tee "$LIBVIRT_QEMU_CONF" >/dev/null
}

# libvirt_up: a libvirtd that answers on $LIBVIRT_URI. One already running is
# used as it is; with systemd the system service is started; without, this
# script starts libvirtd itself (and libvirt_down stops it).
libvirt_up() {
  ensure_packages libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
  mkdir -p "$LIBVIRT_DIR"
  if virsh_ uri >/dev/null 2>&1; then
    say "libvirtd is running ($LIBVIRT_URI)"
    libvirt_qemu_conf
    return 0
  fi
  # The QEMU driver refuses to load without its user and group, even when
  # qemu.conf says root (libvirt-daemon-system would create them, and pulls
  # in systemd).
  getent group libvirt-qemu >/dev/null || as_root groupadd -r libvirt-qemu
  getent passwd libvirt-qemu >/dev/null ||
    as_root useradd -r -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
  libvirt_qemu_conf
  if [[ -d /run/systemd/system ]]; then
    say "starting the libvirtd service (systemd)"
    as_root systemctl start libvirtd || die "systemctl start libvirtd failed (journalctl -u libvirtd)"
  else
    say "starting libvirtd (no systemd; log: $LIBVIRT_DIR/libvirtd.log)"
    as_root mkdir -p /run/libvirt /var/log/libvirt/qemu /var/lib/libvirt/qemu
    as_root env LIBVIRT_LOG_OUTPUTS="3:file:$LIBVIRT_DIR/libvirtd.log" \
      libvirtd --daemon --pid-file "$LIBVIRT_PIDFILE" ||
      die "libvirtd did not start (log: $LIBVIRT_DIR/libvirtd.log)"
    LIBVIRT_STARTED=1
  fi
  local _
  for _ in $(seq 100); do
    virsh_ uri >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "libvirtd does not answer on $LIBVIRT_URI (log: $LIBVIRT_DIR/libvirtd.log)"
}

# libvirt_up_b: the second libvirtd (B, see LIBVIRT_B_DIR), after
# libvirt_up. One left answering by an earlier run is used as it is.
# Returns 1, saying why, when this machine cannot make a
# mount namespace (unshare --mount needs CAP_SYS_ADMIN).
libvirt_up_b() {
  local entry uuid _
  if virsh_b uri >/dev/null 2>&1; then
    say "libvirtd B is running ($LIBVIRT_B_URI)"
    LIBVIRT_B_USED=1
    return 0
  fi
  as_root unshare --mount true 2>/dev/null || {
    say "unshare --mount is refused here (no CAP_SYS_ADMIN): no second libvirtd"
    return 1
  }
  # State of an earlier B (its domains, sockets, monitor folders) goes;
  # its configuration, host UUID included, and its cache of QEMU's
  # capabilities stay.
  as_root rm -rf "$LIBVIRT_B_DIR/run" "$LIBVIRT_B_DIR/lib"
  as_root mkdir -p "$LIBVIRT_B_DIR"/{etc/qemu,run,lib,cache,log/qemu}
  for entry in "${LIBVIRT_B_MOUNTS[@]}"; do as_root mkdir -p "${entry#*:}"; done
  as_root cp "$LIBVIRT_QEMU_CONF" "$LIBVIRT_B_DIR/etc/qemu.conf"
  if [[ ! -f $LIBVIRT_B_DIR/etc/libvirtd.conf ]]; then
    uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
    echo "host_uuid = \"$uuid\"   $LIBVIRT_CONF_MARK (libvirtd B)" |
      as_root tee "$LIBVIRT_B_DIR/etc/libvirtd.conf" >/dev/null
  fi
  local mounts="mount --make-rprivate /"
  for entry in "${LIBVIRT_B_MOUNTS[@]}"; do
    mounts+=" && mount --bind '$LIBVIRT_B_DIR/${entry%%:*}' '${entry#*:}'"
  done
  say "starting libvirtd B (own mount namespace; log: $LIBVIRT_B_DIR/libvirtd.log)"
  # Its descriptors are closed: a daemon holding our stderr's pipe would
  # keep a caller that reads it waiting.
  as_root unshare --mount bash -c "$mounts && exec env LIBVIRT_LOG_OUTPUTS='3:file:$LIBVIRT_B_DIR/libvirtd.log' \
    libvirtd --daemon --config /etc/libvirt/libvirtd.conf --pid-file /run/libvirt/vgpu-libvirtd-b.pid" \
    </dev/null >/dev/null 2>&1 {VGPU_STDERR}>&- ||
    die "libvirtd B did not start (log: $LIBVIRT_B_DIR/libvirtd.log)"
  LIBVIRT_B_STARTED=1
  for _ in $(seq 100); do
    virsh_b uri >/dev/null 2>&1 && break
    sleep 0.1
  done
  virsh_b uri >/dev/null 2>&1 || die "libvirtd B does not answer on $LIBVIRT_B_URI (log: $LIBVIRT_B_DIR/libvirtd.log)"
  # B probes our QEMU's capabilities once (seconds); done now, not in the
  # middle of a migration while the guest's work runs out.
  virsh_b domcapabilities --emulatorbin "$QEMU_BIN" --virttype qemu >/dev/null ||
    die "libvirtd B cannot use $QEMU_BIN (log: $LIBVIRT_B_DIR/libvirtd.log)"
  LIBVIRT_B_USED=1
}

# libvirt_down_b NAME...: destroy these domains on B (its domains are
# transient), then stop B if this script started it.
libvirt_down_b() {
  local name pid
  if ((LIBVIRT_B_USED)); then
    for name in "$@"; do virsh_b destroy "$name" >/dev/null 2>&1 || true; done
  fi
  if ((LIBVIRT_B_STARTED)) && [[ -f $LIBVIRT_B_PIDFILE ]]; then
    pid=$(cat "$LIBVIRT_B_PIDFILE")
    as_root kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do as_root kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    LIBVIRT_B_STARTED=0
  fi
  LIBVIRT_B_USED=0
}

# libvirt_down: remove the domains this script defined (on B too); stop
# libvirtd and B if this script started them. Safe to call twice, and from
# an EXIT trap.
libvirt_down() {
  local name pid
  libvirt_down_b "${LIBVIRT_DOMAINS[@]}"
  for name in "${LIBVIRT_DOMAINS[@]}"; do
    virsh_ destroy "$name" >/dev/null 2>&1 || true
    virsh_ undefine "$name" >/dev/null 2>&1 || true
  done
  LIBVIRT_DOMAINS=()
  if ((LIBVIRT_STARTED)) && [[ -f $LIBVIRT_PIDFILE ]]; then
    pid=$(cat "$LIBVIRT_PIDFILE")
    as_root kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do as_root kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    LIBVIRT_STARTED=0
  fi
}

# domain_xml NAME TEMPLATE OUT TESTS VRAM_MIB [SOCKET] [KERNEL_ARGS]: the
# template filled with this machine's paths (QEMU, firmware, guest kernel
# and initramfs); KERNEL_ARGS are added to the guest's command line.
domain_xml() {
  local name=$1 template=$2 out=$3 tests=$4 vram=$5 socket=${6:-} extra=${7:-}
  # no_timer_check: Linux's boot-time check of the timer interrupt panics
  # ("IO-APIC + timer doesn't work!") when TCG gets too little CPU (seen at
  # load average 25); scripts/run-guest passes it too.
  local args=() path cmdline="console=ttyS0 quiet panic=-1 no_timer_check vgpu_vram_mib=$vram vgpu_tests=$tests${extra:+ $extra}"
  # A VM of vgpud has no system memory yet (docs/vgpud.md): the guest's
  # pinned-memory test then expects its DMA to fault.
  [[ -z $socket ]] || cmdline+=" vgpu_sysmem=0"
  for path in "${FIRMWARE_PATHS[@]}"; do args+=(--firmware "$FIRMWARE_DIR/root/$path"); done
  python3 "$VGPU_ROOT/scripts/lib/libvirt_xml.py" "$template" "$out" "${args[@]}" \
    NAME="$name" MEMORY_MIB=512 EMULATOR="$QEMU_BIN" KERNEL="$GUEST_DIR/vmlinuz" \
    INITRD="$GUEST_DIR/initramfs.cpio.gz" SERIAL_LOG="$LIBVIRT_DIR/$name.serial.log" \
    CMDLINE="$cmdline" \
    VRAM_MIB="$vram" SOCKET="$socket" VGPU_OPTIONS="" ||
    die "could not fill $template"
}

# domain_start NAME XML: define and start the domain, paused; the caller
# resumes it. A leftover domain of the same name from an earlier run of
# ours is removed first; anyone else's is not touched.
domain_start() {
  local name=$1 xml=$2
  if virsh_ dominfo "$name" >/dev/null 2>&1; then
    virsh_ dumpxml "$name" | grep -q "$QEMU_BIN" ||
      die "a libvirt domain named $name exists and is not ours: choose another --name"
    virsh_ destroy "$name" >/dev/null 2>&1 || true
    virsh_ undefine "$name" >/dev/null || die "could not undefine the old domain $name"
  fi
  rm -f "$LIBVIRT_DIR/$name.serial.log"
  virsh_ define "$xml" >/dev/null || die "virsh define $xml failed"
  LIBVIRT_DOMAINS+=("$name")
  virsh_ start --paused "$name" >/dev/null ||
    die "virsh start $name failed (libvirt's QEMU log: /var/log/libvirt/qemu/$name.log)"
}

# domain_counters NAME [VIRSH]: the vGPU's counters, as JSON, through
# libvirt's monitor (the device's read-only QOM property "counters", an
# object); VIRSH is virsh_ (default) or virsh_b, the libvirtd to ask.
domain_counters() {
  "${2:-virsh_}" qemu-monitor-command "$1" \
    '{"execute":"qom-get","arguments":{"path":"/machine/peripheral/vgpu0","property":"counters"}}' |
    python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["return"]))'
}

# domain_state NAME: running, paused, shut off, ... ("gone" when undefined)
domain_state() { virsh_ domstate "$1" 2>/dev/null || echo gone; }

# domain_wait NAME TIMEOUT_S: wait for the guest's summary line in its
# serial log (or the domain's end); prints the line, or nothing.
domain_wait() {
  local name=$1 timeout_s=$2 log="$LIBVIRT_DIR/$1.serial.log" start line
  start=$(date +%s)
  while (($(date +%s) - start < timeout_s)); do
    line=$(tr -d '\r' <"$log" 2>/dev/null | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n1 || true)
    [[ -n $line ]] && { echo "$line"; return 0; }
    [[ $(domain_state "$name") == running || $(domain_state "$name") == paused ]] || break
    sleep 0.2
  done
  tr -d '\r' <"$log" 2>/dev/null | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n1 || true
}

# domain_stop NAME: wait up to 10 s for the guest's own poweroff, then
# destroy; leaves the domain defined.
domain_stop() {
  local _
  for _ in $(seq 50); do
    [[ $(domain_state "$1") == "shut off" ]] && return 0
    sleep 0.2
  done
  virsh_ destroy "$1" >/dev/null 2>&1 || true
}
