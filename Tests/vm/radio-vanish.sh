#!/usr/bin/env bash
# A vanished adapter is recovered: a node on hci1 sees its controller disappear when BlueZ's
# emulator is killed (the socket fails with EPIPE, the stack says UNREG), logs the radio off with
# the reason, and when the emulator comes back (same index, since the node closed its dead socket)
# it powers the adapter up, sets it up again and logs the radio on. It restarts btvirt, so it
# leaves three controllers behind as the VM had them.
. "$(dirname "$0")/lib/common.bash"

cat > "$SCRATCH/v.yaml" <<YAML
data: $SCRATCH/v
board: sim
radio:
  adapter: hci1
  retry_max: 2s
simulation:
  advertisers: 0
YAML
events() { "$VIGIL" log tail --json -n 100000 --kind radio-state-changed --data "$SCRATCH/v" 2>/dev/null; }
count() { events | grep -c -- "$1" || true; }
"$VIGIL" run --config "$SCRATCH/v.yaml" > "$SCRATCH/v.log" 2>&1 &
NODE=$!
BACKGROUND+=("$NODE")
on() { [ "$(count RADIO_STATE_ON)" -ge "$1" ]; }
if wait_ms 60000 on 1; then ok "the radio came on"; else bad "the radio never came on"; tail -n 20 "$SCRATCH/v.log"; finish; fi

pkill -x btvirt
vanished() { events | grep -q 'vanished'; }
if wait_ms 20000 vanished; then ok "the vanished adapter is logged: $(events | tail -n 1 | grep -o '"reason":"[^"]*"')"
else bad "no radio-off event after btvirt was killed"; events | sed 's/^/     | /'; fi

btvirt -L -l3 >/dev/null 2>&1 &
if wait_ms 30000 on 2; then ok "recovered on the new controller: $(events | tail -n 1 | grep -o '"reason":"[^"]*"')"
else bad "no recovery after btvirt came back"; events | sed 's/^/     | /'; tail -n 20 "$SCRATCH/v.log" | sed 's/^/     | /'; fi
kill -TERM "$NODE"; wait "$NODE"
check "the node stops cleanly (exit 0)" [ $? -eq 0 ]
finish
