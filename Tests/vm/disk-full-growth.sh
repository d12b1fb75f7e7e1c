#!/usr/bin/env bash
# A card the log fills by itself, for real: a 64 MiB ext4 on a loop device filled from outside
# up to a few hundred KiB, then the node's own log grows into the rest. Whichever write meets
# the end (a single page, or several in one writev that the kernel cuts short), the node must
# take it as a full disk (docs/log.md "A failing SD card": the disk reserve handed back, scan hits refused, `vigil status`
# "disk FULL"), never as a failed card ("log FAILED", running from memory, nothing logged any
# more). Three fresh file systems, with 100, 250 and 400 KiB left, so the end falls at different
# places in a commit. On the full disk a check-in is acknowledged as durable.
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/disk.bash"

load_modules
loop_device 64
for leave in 100 250 400; do
  echo "$leave KiB left free"
  make_fs "$LOOP"
  DATA="$MNT/data"
  CONFIG="$SCRATCH/vigil.yaml"
  printf 'data: %s\nsimulation:\n  advertisers: 400   # about 200 scan hits a second\n' "$DATA" > "$CONFIG"
  start_node "$CONFIG" "node-$leave"
  "$VIGIL" resident add r1 --interval 4h --data "$DATA" > /dev/null || bad "cannot enrol r1"
  dd if=/dev/zero of="$MNT/filler" bs=64k 2> /dev/null
  truncate -s "-${leave}K" "$MNT/filler"
  state() { "$VIGIL" status --data "$DATA" 2>/dev/null | grep -oE 'disk FULL|log FAILED' | head -n 1; }
  settled() { [ -n "$(state)" ] || dead "$NODE"; }
  wait_ms 60000 settled
  s=$(state)
  if [ "$s" = "disk FULL" ]; then
    ok "the node says 'disk FULL' (refused so far: $(status_field "$DATA" refusedDiskFull))"
    out=$("$VIGIL" checkin r1 --data "$DATA" 2>&1); rc=$?
    durable() { [ "$rc" = 0 ] && [[ "$out" != *"held only in memory"* ]]; }
    check "a check-in on the full disk is acknowledged as durable ($rc: ${out//$'\n'/ | })" durable
  elif [ "$s" = "log FAILED" ]; then
    bad "the node took the full disk for a failed card: $("$VIGIL" status --data "$DATA" | grep 'log FAILED' | cut -c1-200)"
  elif dead "$NODE"; then
    bad "the node stopped on the full disk; its stderr:"; tail -n 4 "$SCRATCH/node-$leave.err" | cut -c1-250 | sed 's/^/     | /'
  else
    bad "the node says neither 'disk FULL' nor 'log FAILED' 60 s after the fill ($(df -k --output=avail "$MNT" | tail -n 1) KiB free)"
  fi
  if alive "$NODE"; then kill -TERM "$NODE"; wait "$NODE"; rc=$?; check "SIGTERM stops it (exit $rc)" [ "$rc" = 0 ]; fi
  "$VIGIL" log check --data "$DATA" > "$SCRATCH/check.log" 2>&1
  check "vigil log check exits 0 ($?)" [ "$?" = 0 ]
  umount "$MNT"
done
finish
