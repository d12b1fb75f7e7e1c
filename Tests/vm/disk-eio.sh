#!/usr/bin/env bash
# A disk that starts failing every write and flush (EIO), for real: ext4 on a device-mapper
# linear target over a loop device; a node on it with the simulated radio (scan hits keep the
# writer busy) and a client taking check-ins. The table is swapped to `error` mid-stream. As
# docs/log.md "Failing safe" says: nothing asked for after the failure is acknowledged as durable; the
# node runs on from memory (check-ins answered "held only in memory", the SOS button lights red,
# `vigil status` says "log FAILED"), and since it then holds check-ins and an SOS it stays up past
# log.failed_restart_after. With the disk back (linear table, umount, e2fsck, mount): `vigil log
# check` passes, every check-in acknowledged as durable is in the log, and a new node starts on
# it and takes a durable check-in. (disk-eio-restart.sh: a failure with nothing to lose, and a
# card read-only at start.)
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/disk.bash"

load_modules
node_on_failing_disk vigil-eio
ok "node running on ext4 over dm-linear ($DEV)"
check "r1 enrolled" "$VIGIL" resident add r1 --interval 4h --data "$DATA"
start_client r1 "$DATA"
check "at least 3 check-ins acknowledged before the disk fails" wait_ms 30000 acked_at_least 3
echo "     before the failure: $(acked_count) check-ins acknowledged, $(status_field "$DATA" recordsWritten) records written"

echo "1. the table becomes 'error': every write and flush fails with EIO"
dm_table "$DM_NAME" "0 $SIZE error" || bad "could not swap the table to error"
switched=$(now_ns)
log_failed() { "$VIGIL" status --data "$DATA" 2>/dev/null | grep -q 'log FAILED'; }
if wait_ms 20000 log_failed; then
  ok "vigil status says 'log FAILED' $(( ($(now_ns) - switched) / 1000000 )) ms after the swap"
  "$VIGIL" status --data "$DATA" | grep -A1 'log FAILED' | cut -c1-200 | sed 's/^/     | /'
else
  bad "vigil status does not say 'log FAILED' 20 s after the swap"
fi
check "the node runs on from memory" alive "$NODE"
# EIO, or EROFS when ext4 (errors=remount-ro) met the error first in its own writeback and made
# the card read-only before the log's write reached it: either way the card failed.
check "its stderr names the failed write or flush (Input/output error or Read-only file system)" \
  grep -qiE 'input/output error|EIO|read-only file system' "$SCRATCH/node.err"
grep -m1 'running from memory' "$SCRATCH/node.err" | cut -c1-300 | sed 's/^/     | /'
held_soon() { [ "$(asked_after "$switched" held)" -ge 1 ]; }
check "check-ins asked for after the swap are answered 'held only in memory'" wait_ms 15000 held_soon

echo "2. the SOS button still works on a node running from memory"
out=$("$VIGIL" sim press sos --data "$DATA" 2>&1); rc=$?
check "vigil sim press sos exits 0 ($rc: $out)" [ "$rc" = 0 ]
red_on() { [ "$(status_field "$DATA" red)" = true ]; }
check "red lights (the node's live outputs)" wait_ms 15000 red_on

echo "3. holding check-ins and an SOS in memory, it stays up past log.failed_restart_after (${RESTART_AFTER} s)"
until_ns=$(( switched + (RESTART_AFTER + 8) * 1000000000 ))
while [ "$(now_ns)" -lt "$until_ns" ]; do sleep 0.5; done
check "still running $(( ($(now_ns) - switched) / 1000000000 )) s after the swap" alive "$NODE"
check "it says why it stays up" grep -q 'staying up from memory' "$SCRATCH/node.err"
stop_client
late=$(asked_after "$switched" acked)
check "no check-in asked for after the swap was acknowledged as durable ($late)" [ "$late" = 0 ]
echo "     check-ins: $(acked_count) durable, $(grep -c . "$SCRATCH/held") held only in memory, $(grep -c . "$SCRATCH/refused") refused"
kill -TERM "$NODE"; wait "$NODE"; rc=$?
echo "     SIGTERM: the node exited with status $rc"

echo "4. the disk comes back: linear table, umount, e2fsck, mount"
dm_table "$DM_NAME" "0 $SIZE linear $LOOP 0" || bad "could not swap the table back to linear"
remount_checked
missing=$(missing_acked "$DATA")
check "every check-in acknowledged as durable ($(acked_count)) is in the log${missing:+ (missing: $(echo $missing))}" [ -z "$missing" ]

echo "5. a new node starts on the recovered disk and takes a durable check-in"
start_node "$CONFIG" node2
ok "second node running"
out=$("$VIGIL" checkin r1 --data "$DATA" 2>&1); rc=$?
durable() { [ "$rc" = 0 ] && [[ "$out" != *"held only in memory"* ]]; }
check "a check-in is acknowledged as durable ($rc: $out)" durable
sleep 2
if alive "$NODE"; then
  kill -TERM "$NODE"; wait "$NODE"; rc=$?
  check "SIGTERM stops it cleanly (exit $rc)" [ "$rc" = 0 ]
else
  wait "$NODE"; rc=$?
  bad "the second node stopped by itself (exit $rc); its stderr:"
  sed 's/^/     | /' "$SCRATCH/node2.err"
fi
finish
