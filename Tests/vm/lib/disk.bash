# Helpers for the failing-disk tests (Tests/vm/disk-*.sh). Sourced after common.bash, never run.
#
# Block devices in the VM: a loop device over a file on the VM's tmpfs, optionally under a
# device-mapper target whose table a test swaps (linear ↔ error), ext4 on top. The VM kernel's
# modules are loaded from the cache scripts/radio-vm unpacked them to ($VM_KERNEL_ROOT): the
# kernel cannot load them by itself there.
: "${VM_KERNEL_ROOT:?VM_KERNEL_ROOT is unset: run inside scripts/radio-vm}"

LOOP=""; DM_NAME=""; MNT=""
disk_cleanup() {
  local pid
  for pid in "${BACKGROUND[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  sleep 0.2
  [ -z "$MNT" ] || ! mountpoint -q "$MNT" || umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
  [ -z "$DM_NAME" ] || dmsetup remove --retry "$DM_NAME" 2>/dev/null
  [ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null
}
trap 'disk_cleanup; cleanup' EXIT

load_modules() {
  modprobe -d "$VM_KERNEL_ROOT" -a loop dm-mod ext4 ||
    { bad "cannot load loop, dm-mod and ext4 from $VM_KERNEL_ROOT"; finish; }
}

# loop_device MIB: a loop device over a fresh MIB-MiB file in $SCRATCH; sets LOOP.
loop_device() {
  truncate -s "$1M" "$SCRATCH/disk.img"
  LOOP=$(losetup -f --show "$SCRATCH/disk.img") || { bad "losetup failed"; finish; }
}

# sectors DEVICE: its size in 512-byte sectors.
sectors() { blockdev --getsz "$1"; }

# dm_table NAME TABLE: load TABLE into the device-mapper device NAME and switch to it at once
# (suspend without freezing the file system, so writes in flight meet the new table).
dm_table() {
  dmsetup suspend --nolockfs "$1" && dmsetup reload "$1" --table "$2" && dmsetup resume "$1"
}

# make_fs DEVICE: a fresh ext4 on DEVICE, mounted at $SCRATCH/mnt (sets MNT).
make_fs() {
  mkfs.ext4 -q -F "$1" || { bad "mkfs.ext4 $1 failed"; finish; }
  MNT="$SCRATCH/mnt"; mkdir -p "$MNT"
  mount -t ext4 "$1" "$MNT" || { bad "cannot mount $1"; finish; }
}

# node_answers DATA: a node runs on DATA and answers on its control socket (a socket file alone
# may be left over from a node that died).
node_answers() { "$VIGIL" status --json --data "$1" 2>/dev/null | grep -q '"live":{'; }

# start_node CONFIG NAME: `vigil run` in the background, stdout and stderr kept apart in
# $SCRATCH/NAME.out and NAME.err; waits (60 s) until it answers. Sets NODE.
start_node() {
  local data
  data=$(sed -n 's/^data: //p' "$1")
  "$VIGIL" run --config "$1" > "$SCRATCH/$2.out" 2> "$SCRATCH/$2.err" &
  NODE=$!
  BACKGROUND+=("$NODE")
  if ! wait_ms 60000 node_answers "$data"; then
    bad "the node ($2) did not start within 60 s; its output:"
    sed 's/^/     | /' "$SCRATCH/$2.out" "$SCRATCH/$2.err"
    # What the probe saw: whether the node lives, what `vigil status` says now, the directory.
    if alive "$NODE"; then echo "     the node (pid $NODE) is running"; else echo "     the node (pid $NODE) has exited"; fi
    echo "     vigil status --json now:"
    timeout 20 "$VIGIL" status --json --data "$data" 2>&1 | cut -c1-400 | tail -n 5 | sed 's/^/     | /'
    echo "     (exit ${PIPESTATUS[0]})"
    ls -la "$data" 2>&1 | sed 's/^/     | /'
    finish
  fi
}

# alive PID: the process runs (a zombie, exited but not yet waited for, does not).
alive() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; [ "${s%% *}" != Z ]; }
dead() { ! alive "$1"; }

# A check-in client: `vigil checkin RESIDENT` over and over until $SCRATCH/stop-client exists.
# Each one acknowledged as durable (exit 0, no warning) is a line "SEQUENCE START_NS END_NS" in
# $SCRATCH/acked; each answered "held only in memory" (exit 0 with that warning: the node's log
# failed, docs/log.md "Failing safe") the same in $SCRATCH/held; each refused "START_NS END_NS EXIT
# MESSAGE" in $SCRATCH/refused.
checkin_client() {
  local resident=$1 data=$2 out rc t0 seq
  while [ ! -e "$SCRATCH/stop-client" ]; do
    t0=$(now_ns)
    out=$("$VIGIL" checkin "$resident" --data "$data" 2>&1); rc=$?
    if [ "$rc" = 0 ] && [[ "$out" =~ \(event\ ([0-9]+)\) ]]; then
      seq=${BASH_REMATCH[1]}
      if [[ "$out" == *"held only in memory"* ]]; then
        echo "$seq $t0 $(now_ns)" >> "$SCRATCH/held"
      else
        echo "$seq $t0 $(now_ns)" >> "$SCRATCH/acked"
      fi
    else
      echo "$t0 $(now_ns) $rc ${out//$'\n'/ | }" >> "$SCRATCH/refused"
    fi
  done
}
start_client() {
  rm -f "$SCRATCH/stop-client"; touch "$SCRATCH/acked" "$SCRATCH/held" "$SCRATCH/refused"
  checkin_client "$1" "$2" &
  CLIENT=$!
  BACKGROUND+=("$CLIENT")
}
stop_client() { : > "$SCRATCH/stop-client"; wait "$CLIENT" 2>/dev/null; }
acked_count() { grep -c . "$SCRATCH/acked" 2>/dev/null || true; }
# asked_after NS FILE: how many lines of FILE (acked, held: "SEQUENCE START_NS ...") asked for after NS.
asked_after() { awk -v s="$1" '$2 > s' "$SCRATCH/$2" | grep -c . || true; }
acked_at_least() { [ "$(acked_count)" -ge "$1" ]; }

# logged_sequences DATA KIND: the sequences of that kind's events in the log, one a line.
logged_sequences() {
  "$VIGIL" log tail --json -n 1000000 --kind "$2" --data "$1" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p'
}
# missing_acked DATA: acknowledged check-in sequences that are not in the log (none: empty).
missing_acked() {
  comm -23 <(cut -d' ' -f1 "$SCRATCH/acked" | sort -u) <(logged_sequences "$1" check-in | sort -u)
}

# status_field DATA KEY: a number or boolean from the running node's `vigil status --json`.
status_field() {
  local s
  s=$("$VIGIL" status --json --data "$1" 2>/dev/null) || return 1
  [[ "$s" =~ \"$2\":([^,}]*) ]] && echo "${BASH_REMATCH[1]}"
}

# node_on_failing_disk NAME: ext4 on a device-mapper linear target NAME over a 128 MiB loop
# device (`dm_table` swaps it to `error`), and a node on it hearing 40 simulated advertisers
# (about 20 scan hits a second: the writer commits all the time), log.failed_restart_after
# RESTART_AFTER seconds. Sets DM_NAME, SIZE (sectors), DEV, DATA, CONFIG and RESTART_AFTER.
node_on_failing_disk() {
  loop_device 128
  DM_NAME="$1"
  SIZE=$(sectors "$LOOP")
  dmsetup create "$DM_NAME" --table "0 $SIZE linear $LOOP 0" || { bad "dmsetup create failed"; finish; }
  dmsetup mknodes "$DM_NAME"   # no udev in the VM to make /dev/mapper/NAME
  DEV=/dev/mapper/$DM_NAME
  make_fs "$DEV"
  DATA="$MNT/data"
  CONFIG="$SCRATCH/vigil.yaml"
  RESTART_AFTER=10
  cat > "$CONFIG" <<YAML
data: $DATA
simulation:
  advertisers: 40     # about 20 scan hits a second: the writer commits all the time
YAML
  # More would fill the VM's one emulated CPU (TCG): at 200, a CI run's node could not answer
  # `vigil status` within a minute.
  cat >> "$CONFIG" <<YAML
log:
  failed_restart_after: ${RESTART_AFTER}s
YAML

  start_node "$CONFIG" node
}

# remount_checked: the disk back after a failure: umount, e2fsck -fy (exit 1 = errors corrected),
# mount again, and `vigil log check` on DATA must pass.
remount_checked() {
  check "umount" umount "$MNT"
  e2fsck -fy "$DEV" > "$SCRATCH/fsck.log" 2>&1; local fsck_rc=$?
  check "e2fsck -fy exits 0 or 1 (exit $fsck_rc: 1 = errors corrected)" [ "$fsck_rc" -le 1 ]
  [ "$fsck_rc" -le 1 ] || sed 's/^/     | /' "$SCRATCH/fsck.log"
  check "mount again" mount -t ext4 "$DEV" "$MNT"
  "$VIGIL" log check --data "$DATA" > "$SCRATCH/check.log" 2>&1; local check_rc=$?
  check "vigil log check exits 0 ($check_rc): $(tail -n 1 "$SCRATCH/check.log")" [ "$check_rc" = 0 ]
  [ "$check_rc" = 0 ] || sed 's/^/     | /' "$SCRATCH/check.log"
}
