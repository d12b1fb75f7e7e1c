#!/usr/bin/env bash
# Two Vigil nodes on BlueZ's emulated controllers (btvirt): A on hci0, B on hci1, both on the raw
# HCI channel with the same shelter key, A capturing every HCI packet to a btsnoop file.
#  1. both report the radio on; B's log holds scan batches with hits of A's presence advert
#     (service data 0xFCF1): a window's hits are one scan-batch record
#  2. an SOS raised at A (long press) reaches B as an AlertReceived with A's id, 0 hops, and B's
#     relay (hop 1) is heard back at A; a short press at B acknowledges it over the air, and A
#     logs AlertAcknowledged and dips its red LED
#  3. A's cancel (an 8.5 s hold: a second long press only re-affirms, issue 10) reaches B as an AlertCancelled that clears it; a road hazard
#     raised at A with `vigil alert raise` reaches B with its location
#  4. a frame with a wrong tag (sent by hand from hci2) is counted as forged and never logged
#  5. `hciconfig hci1 reset` is recovered: B logs the radio off, then on, and hears A again
#  6. B restarted on the user channel (exclusive) hears A's next SOS
#  7. A's btsnoop capture opens in tshark with every packet dissected, and `vigil radio replay`
#     of B's capture finds A's SOS frame
. "$(dirname "$0")/lib/common.bash"

command -v hciconfig >/dev/null || { echo "SKIPPED: no hciconfig in the VM"; exit 77; }
[ -e /sys/class/bluetooth/hci2 ] || { bad "this test needs three controllers (scripts/radio-vm -n 3)"; finish; }

"$VIGIL" radio keygen --out "$SCRATCH/shelter.key" >/dev/null || { bad "keygen failed"; finish; }
config() { # config NAME ADAPTER CHANNEL
  cat > "$SCRATCH/$1.yaml" <<YAML
data: $SCRATCH/$1
board: sim
radio:
  adapter: $2
  channel: $3
  scan_window: 1s
  retry_max: 2s
  advertise:
    rotation_slot: 300ms
  alerts:
    key_file: $SCRATCH/shelter.key
    relay_delay_min: 100ms
    relay_delay_max: 300ms
  capture:
    path: $SCRATCH/$1.btsnoop
simulation:
  advertisers: 0
alarms:
  long_press: 1s
YAML
}
config a hci0 raw
config b hci1 raw

events() { "$VIGIL" log tail --json -n 100000 --kind "$2" --data "$SCRATCH/$1" 2>/dev/null; }
has_event() { events "$1" "$2" | grep -q -- "${3:-.}"; }
count() { events "$1" "$2" | grep -c -- "${3:-.}" || true; }
start() { # start NAME [extra args]
  local name=$1; shift
  "$VIGIL" run --config "$SCRATCH/$name.yaml" "$@" >> "$SCRATCH/$name.log" 2>&1 &
  eval "PID_$name=$!"
  BACKGROUND+=("$!")
}
# stop NAME: SIGTERM, and the node's exit status (0 = a clean stop).
stop() { local pid; eval "pid=\$PID_$1"; kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
show_log() { echo "     --- $1's output:"; tail -n 30 "$SCRATCH/$1.log" | sed 's/^/     | /'; }
radio_on() { has_event "$1" radio-state-changed 'RADIO_STATE_ON'; }

start a
start b
if wait_ms 60000 radio_on a && wait_ms 60000 radio_on b; then
  ok "A and B report the radio on: $(events b radio-state-changed | tail -n 1 | grep -o '"reason":"[^"]*"')"
else
  bad "the radios did not come on"; show_log a; show_log b; finish
fi
A_ID=$(tr -d '\n' < "$SCRATCH/a/node-id")

echo "1. B logs scan hits of A's presence advert"
# 64753 = 0xFCF1, Vigil's service data UUID; a window's hits are one scan-batch record, shown as
# the hits it holds.
if wait_ms 20000 has_event b scan-batch '64753'; then ok "B logged a scan batch with a hit carrying A's service data"; else bad "no hit of A in B's scan batches"; show_log b; fi

echo "2. an SOS at A reaches B"
"$VIGIL" sim press sos --data "$SCRATCH/a" >/dev/null
if wait_ms 10000 has_event a alert-raised; then ok "A raised its SOS"; else bad "A raised no SOS"; show_log a; fi
SOS=$(events a alert-raised | tail -n 1 | grep -o '"counter":[0-9]*' | head -n 1 | cut -d: -f2)
if wait_ms 15000 has_event b alert-received "\"origin\":\"$((16#$A_ID))\""; then
  ok "B logged AlertReceived for A's SOS ($(events b alert-received | tail -n 1 | grep -o '"hops":[0-9]*' || echo 'hops 0'))"
else
  bad "B did not receive A's SOS (A is $A_ID)"; events b alert-received | sed 's/^/     | /'; show_log b
fi
if wait_ms 5000 has_event a outbox-attempt '"notifier":"radio"'; then ok "A's broadcast outbox entry was settled by the radio"; else bad "A's SOS broadcast entry not settled"; fi
# B relays the SOS with one more hop after its relay delay; A hears that relay as its own frame
# coming back (counted, never logged again).
own_echoes() { local n; n=$("$VIGIL" status --json --data "$SCRATCH/a" 2>/dev/null | grep -o '"ownEchoes":[0-9]*' | cut -d: -f2); [ "${n:-0}" -gt 0 ]; }
if wait_ms 10000 own_echoes; then ok "A hears B's relay of its SOS ($("$VIGIL" status --json --data "$SCRATCH/a" | grep -o '"ownEchoes":[0-9]*'))"
else bad "A never heard its SOS relayed by B"; fi

echo "2b. a short press at B acknowledges A's SOS over the air"
"$VIGIL" sim press ack --data "$SCRATCH/b" >/dev/null
# Nothing sounds at B, so the short press answers the call for help (heard_from 0: made at B).
if wait_ms 10000 has_event b alert-acknowledged "\"origin\":\"$((16#$A_ID))\""; then
  if events b alert-acknowledged | grep -q heard_from; then bad "B's acknowledgement claims it was heard: $(events b alert-acknowledged)"
  else ok "B logged its acknowledgement of A's SOS (a short press)"; fi
else bad "B logged no acknowledgement"; show_log b; fi
if wait_ms 15000 has_event a alert-acknowledged "\"origin\":\"$((16#$A_ID))\""; then
  ok "A logged AlertAcknowledged for its SOS ($(events a alert-acknowledged | tail -n 1 | grep -o '"hops":[0-9]*' || echo 'hops 0'))"
else
  bad "A did not hear B's acknowledgement"; show_log a; show_log b
fi
why_a=$("$VIGIL" why --json --data "$SCRATCH/a" 2>/dev/null)
if echo "$why_a" | grep -q 'acknowledged by another box'; then ok "A's red LED shows the acknowledgement (vigil why)"
else bad "A's outputs do not show the acknowledgement"; echo "$why_a" | sed 's/^/     | /'; fi

echo "3. A's cancel clears it on B"
"$VIGIL" sim press sos --hold 8.5s --data "$SCRATCH/a" >/dev/null   # the cancel hold (8 s)
if wait_ms 15000 has_event a alert-cancelled; then ok "A cancelled its SOS"; else bad "A did not cancel"; fi
if wait_ms 15000 has_event b alert-cancelled "\"origin\":\"$((16#$A_ID))\""; then
  ok "B logged AlertCancelled for A's SOS"
else
  bad "B did not hear the cancel"; show_log b
fi
echo "3b. a road hazard raised at A with the CLI reaches B with its location"
"$VIGIL" alert raise road-hazard --at 52.5163,13.3777 --expires 1h --data "$SCRATCH/a" > "$SCRATCH/raise.out" 2>&1 \
  || { bad "vigil alert raise failed: $(cat "$SCRATCH/raise.out")"; }
if wait_ms 15000 has_event b alert-received '"kind":"ROAD_HAZARD"'; then
  hazard=$(events b alert-received | grep '"kind":"ROAD_HAZARD"' | tail -n 1)
  lat=$(echo "$hazard" | grep -o '"latitude_e7":-*[0-9]*' | cut -d: -f2)
  lon=$(echo "$hazard" | grep -o '"longitude_e7":-*[0-9]*' | cut -d: -f2)
  # The frame's grid is about 1.19 m: within 0.6 m is within 54 units of 1e-7 degree of latitude.
  if [ -n "$lat" ] && [ -n "$lon" ] && [ $(( lat > 525163000 ? lat - 525163000 : 525163000 - lat )) -le 60 ] \
     && [ $(( lon > 133777000 ? lon - 133777000 : 133777000 - lon )) -le 100 ]; then
    ok "B logged A's road hazard at $lat,$lon (sent 525163000,133777000)"
  else bad "B's road hazard has the wrong place: $hazard"; fi
else
  bad "B did not receive A's road hazard"; cat "$SCRATCH/raise.out"; show_log b
fi

status_b() { "$VIGIL" status --json --data "$SCRATCH/b" 2>/dev/null; }
# press_sos_at_a KIND [HOLD]: a long press at A (or a hold of HOLD, e.g. 8.5s to cancel), waiting
# until A has logged the KIND it causes (alert-raised or alert-cancelled), so presses never overlap.
press_sos_at_a() {
  local before; before=$(count a "$1")
  "$VIGIL" sim press sos ${2:+--hold "$2"} --data "$SCRATCH/a" >/dev/null
  more() { [ "$(count a "$1")" -gt "$before" ]; }
  wait_ms 15000 more "$1" || bad "A did not log $1 after a long press"
}

echo "4. a frame with a wrong tag is rejected"
forged_before=$(status_b | grep -o '"forged":[0-9]*' | cut -d: -f2)
exp=$(printf '%08x' $(( $(date +%s) + 3600 )))
# Service data 0xFCF1: version 1 | SOS, critical, origin deadbeef, counter 1, expiry, 7-byte tag (wrong).
frame="11 c0 de ad be ef 00 00 01 ${exp:0:2} ${exp:2:2} ${exp:4:2} ${exp:6:2} 01 02 03 04 05 06 07"
hcitool -i hci2 cmd 0x08 0x0006 a0 00 a0 00 03 00 00 00 00 00 00 00 00 07 00 >/dev/null
hcitool -i hci2 cmd 0x08 0x0008 18 17 16 f1 fc $frame 00 00 00 00 00 00 00 >/dev/null
for i in 1 2 3; do
  hcitool -i hci2 cmd 0x08 0x000a 01 >/dev/null; sleep 0.3; hcitool -i hci2 cmd 0x08 0x000a 00 >/dev/null
done
forged_count() { local n; n=$(status_b | grep -o '"forged":[0-9]*' | cut -d: -f2); [ "${n:-0}" -gt "${forged_before:-0}" ]; }
if wait_ms 10000 forged_count; then ok "B counted the forged frame ($(status_b | grep -o '"forged":[0-9]*'))"; else bad "B did not count a forgery"; status_b | sed 's/^/     | /'; fi
if has_event b alert-received '"origin":"3735928559"'; then bad "the forged alert was logged"; else ok "the forged alert is not in B's log"; fi

echo "5. hciconfig hci1 reset is recovered"
off_before=$(count b radio-state-changed 'RADIO_STATE_OFF')
on_before=$(count b radio-state-changed 'RADIO_STATE_ON')
hciconfig hci1 reset 2>/dev/null || true
recovered() { [ "$(count b radio-state-changed 'RADIO_STATE_ON')" -gt "$on_before" ]; }
if wait_ms 20000 recovered; then
  ok "B logged the radio off ($(( $(count b radio-state-changed 'RADIO_STATE_OFF') - off_before )) times) and on again"
else
  bad "B did not recover after the reset"; events b radio-state-changed | tail -n 4 | sed 's/^/     | /'; show_log b
fi
received_before=$(count b alert-received)
press_sos_at_a alert-raised
more_received() { [ "$(count b alert-received)" -gt "$received_before" ]; }
if wait_ms 15000 more_received; then ok "after the reset B hears A's next SOS"; else bad "B hears nothing after the reset"; show_log b; fi
press_sos_at_a alert-cancelled 8.5s # cancel it again (the cancel hold)

echo "6. B on the user channel"
stop b
config b hci1 user
received_before=$(count b alert-received)
on_before=$(count b radio-state-changed 'RADIO_STATE_ON')
start b
if wait_ms 30000 recovered; then ok "B runs on the user channel: $(events b radio-state-changed | tail -n 1 | grep -o '"reason":"[^"]*"')"; else bad "B did not start on the user channel"; show_log b; fi
press_sos_at_a alert-raised
if wait_ms 15000 more_received; then ok "B (user channel) hears A's SOS"
else bad "B (user channel) hears nothing"; show_log b; show_log a; "$VIGIL" status --data "$SCRATCH/b" | tail -n 5 | sed 's/^/     | /'; fi
stop b
check "B stopped cleanly (exit 0)" [ $? -eq 0 ]
stop a
check "A stopped cleanly (exit 0)" [ $? -eq 0 ]

echo "7. captures"
if command -v tshark >/dev/null; then
  frames=$(tshark -r "$SCRATCH/a.btsnoop" 2>/dev/null | grep -c . || true)
  problems=$(tshark -r "$SCRATCH/a.btsnoop" -V 2>/dev/null | grep -ciE 'malformed|\[expert info' || true)
  if [ "${frames:-0}" -gt 10 ] && [ "${problems:-1}" -eq 0 ]; then ok "tshark dissects A's capture: $frames packets, no malformed or expert items"
  else bad "tshark: $frames packets, $problems problems"; tshark -r "$SCRATCH/a.btsnoop" -V 2>&1 | grep -iE -B20 'malformed|\[expert info' | head -n 40 | sed 's/^/     | /'; fi
else
  bad "tshark is not installed (scripts/setup installs it)"
fi
replay=$("$VIGIL" radio replay "$SCRATCH/b.btsnoop" --key-file "$SCRATCH/shelter.key" 2>&1)
if echo "$replay" | grep -q "sos $A_ID:"; then ok "vigil radio replay of B's capture finds A's SOS frame"; else bad "replay did not find A's SOS"; echo "$replay" | sed 's/^/     | /'; fi
if echo "$replay" | grep -qE "vigil frames: [0-9]+ presence, [1-9][0-9]* alert"; then ok "and counts the alert frames it verified"
else bad "replay counts no alert frame"; echo "$replay" | grep "vigil frames" | sed 's/^/     | /'; fi
finish
