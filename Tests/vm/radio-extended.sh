#!/usr/bin/env bash
# The extended-commands path on a real kernel: BlueZ's emulator without -L makes Bluetooth 5
# controllers with LE Extended Advertising (feature bit 12). Two nodes on two of them (raw
# channel) use the extended scan and advertising commands, as the kernel does for such
# controllers, and A's SOS reaches B through LE Extended Advertising Reports.
. "$(dirname "$0")/lib/common.bash"

before=$(ls /sys/class/bluetooth | sort)
btvirt -l2 >/dev/null 2>&1 &
BACKGROUND+=("$!")
new_adapters() { comm -13 <(echo "$before") <(ls /sys/class/bluetooth | sort) | grep -c '^hci' | grep -q '^2$'; }
if ! wait_ms 10000 new_adapters; then bad "btvirt -l2 made no new controllers"; finish; fi
read -r X Y < <(comm -13 <(echo "$before") <(ls /sys/class/bluetooth | sort) | tr '\n' ' ')
ok "two Bluetooth 5 controllers: $X and $Y"

"$VIGIL" radio keygen --out "$SCRATCH/shelter.key" >/dev/null
config() { # config NAME ADAPTER
  cat > "$SCRATCH/$1.yaml" <<YAML
data: $SCRATCH/$1
board: sim
radio:
  adapter: $2
  scan_window: 1s
  retry_max: 2s
  advertise:
    rotation_slot: 300ms
  alerts:
    key_file: $SCRATCH/shelter.key
simulation:
  advertisers: 0
alarms:
  long_press: 1s
YAML
}
config a "$X"
config b "$Y"
events() { "$VIGIL" log tail --json -n 100000 --kind "$2" --data "$SCRATCH/$1" 2>/dev/null; }
has_event() { events "$1" "$2" | grep -q -- "${3:-.}"; }
for n in a b; do
  "$VIGIL" run --config "$SCRATCH/$n.yaml" >> "$SCRATCH/$n.log" 2>&1 &
  BACKGROUND+=("$!")
done
on() { has_event "$1" radio-state-changed 'extended commands'; }
if wait_ms 60000 on a && wait_ms 60000 on b; then
  ok "both radios run on extended commands: $(events b radio-state-changed | tail -n 1 | grep -o '"reason":"[^"]*"')"
else
  bad "the radios did not come on with extended commands"
  for n in a b; do events "$n" radio-state-changed | tail -n 3 | sed 's/^/     | /'; tail -n 10 "$SCRATCH/$n.log" | sed 's/^/     | /'; done
  finish
fi
A_ID=$(tr -d '\n' < "$SCRATCH/a/node-id")
"$VIGIL" sim press sos --data "$SCRATCH/a" >/dev/null
if wait_ms 15000 has_event b alert-received "\"origin\":\"$((16#$A_ID))\""; then ok "A's SOS reached B over extended advertising"
else bad "B did not receive A's SOS"; tail -n 20 "$SCRATCH/b.log" | sed 's/^/     | /'; "$VIGIL" status --data "$SCRATCH/b" | tail -n 4 | sed 's/^/     | /'; fi
finish
