#!/usr/bin/env bash
# A full disk, for real: a 64 MiB ext4 on a loop device, a node on it with the simulated radio
# (scan hits keep the log growing), then a filler file written from outside until ENOSPC. The
# node must stay up: it hands back its disk reserve (DATA/disk-reserve, log.disk_reserve), refuses
# scan hits (counted in `vigil status --json`: log.diskFull, log.refusedDiskFull) and keeps
# taking what matters. A check-in and an SOS press made on the full disk are acknowledged and in
# the log after the node stops cleanly, and the log checks sound.
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/disk.bash"

load_modules
loop_device 64
make_fs "$LOOP"
DATA="$MNT/data"
CONFIG="$SCRATCH/vigil.yaml"
cat > "$CONFIG" <<YAML
data: $DATA
simulation:
  advertisers: 200    # about 100 scan hits a second: the log keeps growing
YAML

start_node "$CONFIG" node
ok "node running on a 64 MiB ext4 ($LOOP)"
reserve=$(stat -c %s "$DATA/disk-reserve" 2>/dev/null || echo none)
check "it holds a disk reserve of 16 MiB (DATA/disk-reserve: $reserve bytes)" [ "$reserve" = $((16 << 20)) ]
check "r1 enrolled" "$VIGIL" resident add r1 --interval 4h --data "$DATA"
sleep 3
echo "     before the fill: $(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ') KiB free, $(status_field "$DATA" recordsWritten) records written"

echo "1. a filler file takes every free block (as root: the reserved blocks too)"
dd if=/dev/zero of="$MNT/filler" bs=64k 2> "$SCRATCH/dd.log"
check "dd stopped on ENOSPC" grep -q 'No space left on device' "$SCRATCH/dd.log"
echo "     filler: $(( $(stat -c %s "$MNT/filler") >> 20 )) MiB, $(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ') KiB free"
full_or_gone() { [ "$(status_field "$DATA" diskFull)" = true ] || dead "$NODE"; }
wait_ms 30000 full_or_gone
if dead "$NODE"; then
  wait "$NODE"; rc=$?
  bad "the node stopped on the full disk (exit $rc); its stderr, last lines:"
  grep -v ' info vigil:' "$SCRATCH/node.err" | tail -n 4 | cut -c1-250 | sed 's/^/     | /'
elif [ "$(status_field "$DATA" diskFull)" = true ]; then
  ok "the node reports the full disk (log.diskFull true)"
else
  bad "log.diskFull is not true 30 s after the fill (status: $("$VIGIL" status --json --data "$DATA" 2>&1 | grep -o '"log":{[^}]*}'))"
fi
check "it handed its reserve back (no DATA/disk-reserve)" [ ! -e "$DATA/disk-reserve" ]

echo "2. on the full disk: a check-in and an SOS are acknowledged"
out=$("$VIGIL" checkin r1 --data "$DATA" 2>&1); rc=$?
durable() { [ "$rc" = 0 ] && [[ "$out" != *"held only in memory"* ]]; }
check "vigil checkin r1 is acknowledged as durable ($rc: ${out//$'\n'/ | })" durable
seq=""; [[ "$out" =~ \(event\ ([0-9]+)\) ]] && seq=${BASH_REMATCH[1]}
out=$("$VIGIL" sim press sos --data "$DATA" 2>&1); rc=$?
check "vigil sim press sos exits 0 ($rc: ${out//$'\n'/ | })" [ "$rc" = 0 ]
sos_raised() { "$VIGIL" log tail --json -n 100 --kind alert-raised --data "$DATA" 2>/dev/null | grep -q '"kind":"SOS"'; }
check "the SOS is logged (alert-raised, kind SOS)" wait_ms 15000 sos_raised
r1=$(status_field "$DATA" refusedDiskFull); sleep 3; r2=$(status_field "$DATA" refusedDiskFull)
check "scan hits are refused and counted (log.refusedDiskFull $r1 -> $r2)" between "${r2:-0}" 1 999999999
check "the count grows while the radio keeps hearing" [ "${r2:-0}" -gt "${r1:-0}" ]
check "vigil status says the disk is full" bash -c "'$VIGIL' status --data '$DATA' | grep -qi 'disk full'"
check "the node is still running" alive "$NODE"

echo "3. stop, then read the log back"
if alive "$NODE"; then
  kill -TERM "$NODE"; wait "$NODE"; rc=$?
  check "SIGTERM stops the node (exit $rc)" [ "$rc" = 0 ]
  [ "$rc" = 0 ] || tail -n 5 "$SCRATCH/node.err" | sed 's/^/     | /'
fi
"$VIGIL" log check --data "$DATA" > "$SCRATCH/check.log" 2>&1; check_rc=$?
check "vigil log check exits 0 ($check_rc)" [ "$check_rc" = 0 ]
[ "$check_rc" = 0 ] || sed 's/^/     | /' "$SCRATCH/check.log"
if [ -n "$seq" ]; then
  check "check-in $seq is in the log" bash -c "'$VIGIL' log tail --json -n 100000 --kind check-in --data '$DATA' | grep -q '^{\"seq\":$seq,'"
fi
check "the SOS is in the log after the stop" sos_raised
finish
