#!/usr/bin/env bash
# The other two ways docs/log.md "Failing safe" says a node meets a failing card, for real (ext4 on
# dm-linear over a loop device, the table swapped to `error`):
# 1. the log fails while the node holds nothing a restart would lose (no residents, no presses:
#    only scan hits): it runs from memory for log.failed_restart_after, then exits non-zero so
#    systemd can try the card again;
# 2. the card is read-only when a node starts (ext4 aborted its journal after the I/O errors, and
#    stays read-only until remounted): the node opens the log for reading only and runs from
#    memory, never exiting for a restart that cannot help; the CLI still reads the log.
# Then the disk comes back (umount, e2fsck, mount): the log checks sound and a node starts.
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/disk.bash"

load_modules
node_on_failing_disk vigil-eio-restart
ok "node running on ext4 over dm-linear ($DEV), hearing the simulated radio"
sleep 3
durable_before=$(status_field "$DATA" durableSequence)

echo "1. the disk fails with only scan hits in memory: the node exits for a restart after ${RESTART_AFTER} s"
dm_table "$DM_NAME" "0 $SIZE error" || bad "could not swap the table to error"
switched=$(now_ns)
if wait_ms $(( (RESTART_AFTER + 25) * 1000 )) dead "$NODE"; then
  took=$(( ($(now_ns) - switched) / 1000000 ))
  wait "$NODE"; rc=$?
  check "it exits non-zero (exit $rc) ${took} ms after the swap" [ "$rc" != 0 ]
  check "not before log.failed_restart_after (${RESTART_AFTER} s): it ran from memory meanwhile" [ "$took" -ge $((RESTART_AFTER * 1000)) ]
else
  bad "still running $((RESTART_AFTER + 25)) s after the swap, holding nothing that matters"
  kill -KILL "$NODE"; wait "$NODE" 2>/dev/null
fi
# EIO, or EROFS when ext4 (errors=remount-ro) met the error first in its own writeback and made
# the card read-only before the log's write reached it: either way the card failed.
check "its stderr names the failed write or flush (Input/output error or Read-only file system)" \
  grep -qiE 'input/output error|EIO|read-only file system' "$SCRATCH/node.err"
check "and that it ran from memory first" grep -q 'running from memory' "$SCRATCH/node.err"
grep -v ' info vigil:' "$SCRATCH/node.err" | grep -v 'event not logged' | tail -n 3 | cut -c1-250 | sed 's/^/     | /'

echo "2. the disk answers again, but ext4 stays read-only until remounted: a node starts on it"
dm_table "$DM_NAME" "0 $SIZE linear $LOOP 0" || bad "could not swap the table back to linear"
if touch "$MNT/probe" 2> "$SCRATCH/touch.err"; then
  bad "the file system still takes writes; cannot test a read-only card (ext4 did not abort)"
else
  ok "the file system refuses writes: $(cat "$SCRATCH/touch.err")"
  "$VIGIL" run --config "$CONFIG" > "$SCRATCH/ro.out" 2> "$SCRATCH/ro.err" &
  NODE=$!
  BACKGROUND+=("$NODE")
  started=$(now_ns)
  from_memory() { grep -q 'running from memory\|run from memory' "$SCRATCH/ro.err" || dead "$NODE"; }
  wait_ms 60000 from_memory
  check "it says it runs from memory on a read-only data directory" grep -q 'read-only' "$SCRATCH/ro.err"
  grep -m1 'read-only' "$SCRATCH/ro.err" | cut -c1-250 | sed 's/^/     | /'
  until_ns=$(( started + (RESTART_AFTER + 10) * 1000000000 ))
  while alive "$NODE" && [ "$(now_ns)" -lt "$until_ns" ]; do sleep 0.5; done
  if alive "$NODE"; then
    ok "still running $(( ($(now_ns) - started) / 1000000000 )) s after its start (past log.failed_restart_after)"
  else
    wait "$NODE"; rc=$?
    bad "it stopped (exit $rc); its stderr:"; tail -n 8 "$SCRATCH/ro.err" | cut -c1-250 | sed 's/^/     | /'
  fi
  tail_ok() { "$VIGIL" log tail -n 1 --json --data "$DATA" > "$SCRATCH/tail.out" 2>&1; }
  check "vigil log tail reads the log on the read-only card" tail_ok
  last=$(sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' "$SCRATCH/tail.out")
  check "its last event ($last) is at or after what was durable before the failure ($durable_before)" \
    [ "${last:-0}" -ge "${durable_before:-1}" ]
  if alive "$NODE"; then kill -TERM "$NODE"; wait "$NODE"; echo "     SIGTERM: it exited with status $?"; fi
fi

echo "3. umount, e2fsck, mount: the log checks sound and a node starts normally"
remount_checked
start_node "$CONFIG" node3
ok "a node runs again"
kill -TERM "$NODE"; wait "$NODE"; rc=$?
check "SIGTERM stops it cleanly (exit $rc)" [ "$rc" = 0 ]
finish
