#!/usr/bin/env bash
# Signed frames on a real kernel (docs/signed-frames.md): two Bluetooth 5 controllers of our
# own on /dev/vhci (extended advertising, Tests/vm/lib/vhci-air.py). A and B are certified boxes of one network (no shelter
# key); the emulator's control FIFO sends frames made by hand with the independent implementation
# (scripts/signed-frame-vectors, Python cryptography) as extended advertisements.
#  1. A's SOS goes out signed over extended advertising and reaches B, which knows only the
#     network key; B, whose clock is not synchronised, does not take its time from one box
#  2. a frame in A's name from another box, a certificate the network did not sign, a frame signed
#     by another box's key, one with its signature stripped and a day-old replay: refused by B and
#     counted, none logged; a valid frame from a box B never heard of is logged
#  3. a revocation sent on the air: B keeps it and refuses the revoked box's next frame; B relays
#     the revocation and A, which never heard it from the source, keeps it too
#  4. a box whose clock is six hours behind: a day-old frame refused, a fresh one accepted, the
#     day-old one refused again
# In the second lane (scripts/vm-test), beside the failing disks: the first lane is the longer.
# vm-test-lane: 2
. "$(dirname "$0")/lib/common.bash"

python3 -c "from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey" 2>/dev/null ||
  { bad "python3 has no cryptography (Debian's python3-cryptography; scripts/setup installs it)"; finish; }
SIGN="python3 ${VIGIL_REPO:-$(dirname "$0")/../..}/scripts/signed-frame-vectors"

# Two controllers of our own on /dev/vhci (Tests/vm/lib/vhci-air.py): Debian 12's btvirt aborts
# on extended adverts longer than 31 bytes. Frames made by hand go on the same air from its
# control FIFO. The boxes use the user channel (the emulator's devices stay unconfigured).
AIR="$SCRATCH/air.ctl"
[ -e /dev/vhci ] || modprobe -d "${VM_KERNEL_ROOT:-/}" hci_vhci 2>/dev/null || true
python3 "$(dirname "$0")/lib/vhci-air.py" 2 "$AIR" > "$SCRATCH/air.out" 2> "$SCRATCH/air.err" &
BACKGROUND+=("$!")
made() { [ -s "$SCRATCH/air.out" ]; }
if ! wait_ms 10000 made; then bad "vhci-air made no controllers: $(cat "$SCRATCH/air.err")"; finish; fi
read -r X Y < "$SCRATCH/air.out"
ok "two Bluetooth 5 controllers on one air: $X (A), $Y (B), and frames made by hand"

# The network's key from a fixed seed, so that the independent implementation can certify the
# hand-made frames' boxes under it; the boxes are certified with vigil keys certify.
NET_SEED=$(printf '5e%.0s' $(seq 32))
STRANGER_SEED=$(printf '22%.0s' $(seq 32))
OTHER_SEED=$(printf '33%.0s' $(seq 32))
ROGUE_NET_SEED=$(printf '44%.0s' $(seq 32))
STRANGER=51570001
echo "$NET_SEED" > "$SCRATCH/network.key"; chmod 600 "$SCRATCH/network.key"
NET_PUB=$($SIGN --public "$NET_SEED")
: > "$SCRATCH/synchronised"
# TIME_SHIFT: how far the VM's clock is set back (step 4); restored when the test ends.
TIME_SHIFT=0
restore_clock() { [ "$TIME_SHIFT" -eq 0 ] || date -s "@$(( $(date +%s) + TIME_SHIFT ))" >/dev/null; TIME_SHIFT=0; }
trap 'restore_clock; cleanup' EXIT

config() { # config NAME ADAPTER CLOCK_FILE
  mkdir -p "$SCRATCH/$1"
  cat > "$SCRATCH/$1.yaml" <<YAML
data: $SCRATCH/$1
board: sim
radio:
  adapter: $2
  channel: user
  scan_window: 1s
  retry_max: 2s
  network_key: $NET_PUB
  signed:
    clock_synchronised_file: $3
  advertise:
    rotation_slot: 300ms
  alerts:
    relay_delay_min: 100ms
    relay_delay_max: 300ms
simulation:
  advertisers: 0
alarms:
  long_press: 1s
YAML
}
# A's clock is synchronised (the file timesyncd would keep); B's and C's are not.
config a "$X" "$SCRATCH/synchronised"
config b "$Y" "$SCRATCH/no-such-file"
config c "$Y" "$SCRATCH/no-such-file"
for n in a b; do
  "$VIGIL" keys certify --network-key "$SCRATCH/network.key" --data "$SCRATCH/$n" >/dev/null || { bad "vigil keys certify failed for $n"; finish; }
done

events() { "$VIGIL" log tail --json -n 100000 --kind "$2" --data "$SCRATCH/$1" 2>/dev/null; }
has_event() { events "$1" "$2" | grep -q -- "${3:-.}"; }
# Every vigil command costs seconds in the emulated VM (no KVM): a node's status is read once
# (snap) and its fields taken from that (got), not one command per field.
snap() { "$VIGIL" status --json --data "$SCRATCH/$1" > "$SCRATCH/$1.status" 2>/dev/null; }
# got NAME SECTION.FIELD: a field of the last snap (air.forged, signing.clock, hci.longPayloadsSkipped)
got() { python3 -c 'import json, sys
v = json.load(open(sys.argv[1])).get("live")
for k in sys.argv[2].split("."): v = (v or {}).get(k)
print("" if v is None else str(v).lower())' "$SCRATCH/$1.status" "$2" 2>/dev/null; }
live() { snap "$1"; got "$1" "$2"; }
counter() { live "$1" "air.$2"; }
# air_counters NAME PREFIX: shell assignments PREFIXcounter=value for every air counter, from one snap
air_counters() { snap "$1"; python3 -c 'import json, sys
air = (json.load(open(sys.argv[1])).get("live") or {}).get("air") or {}
for k, v in air.items(): print(f"{sys.argv[2]}{k}={int(v)}")' "$SCRATCH/$1.status" "$2" 2>/dev/null; }
start() {
  "$VIGIL" run --config "$SCRATCH/$1.yaml" >> "$SCRATCH/$1.log" 2>&1 &
  eval "PID_$1=$!"
  BACKGROUND+=("$!")
}
stop() { local pid; eval "pid=\$PID_$1"; kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
on() { has_event "$1" radio-state-changed 'extended commands'; }
show() {
  echo "     --- $1: air $(live "$1" air), signing $(live "$1" signing)"
  echo "     --- $1: hci: reports $(live "$1" hci.reports), long adverts skipped $(live "$1" hci.longPayloadsSkipped), advertising refused $(live "$1" hci.advertisingRefusals)"
  tail -n 8 "$SCRATCH/$1.log" | sed 's/^/     | /'
}

# send HEX...: each frame as an extended advertisement (non-connectable), a second each, heard by
# $Y's box only (B, then C): A hears them only if B relays them.
send() {
  local frame
  for frame in "$@"; do
    echo "advertise $Y $(printf '%02x' $(( ${#frame} / 2 + 3 )))16f1fc$frame" > "$AIR"
    sleep 1
  done
  echo quiet > "$AIR"
}
# counted NAME COUNTER BEFORE: the counter grew
grew() { local n; n=$(counter "$1" "$2"); [ "${n:-0}" -gt "$3" ]; }

echo "1. A's signed SOS reaches B over extended advertising"
start a; start b
if wait_ms 60000 on a && wait_ms 60000 on b; then ok "both radios run on extended commands"
else bad "the radios did not come on with extended commands"; show a; show b; finish; fi
if "$VIGIL" keys show --data "$SCRATCH/a" | grep -q 'signs its frames: yes'; then ok "A is certified and signs its frames"
else bad "A does not sign: $("$VIGIL" keys show --data "$SCRATCH/a" | tail -n 1)"; fi
A_ID=$(tr -d '\n' < "$SCRATCH/a/node-id")
"$VIGIL" sim press sos --data "$SCRATCH/a" >/dev/null
if wait_ms 20000 has_event b alert-received "\"origin\":\"$((16#$A_ID))\""; then ok "A's SOS reached B, signed"
else bad "B did not receive A's SOS"; show a; show b; finish; fi
snap a; snap b
if [ "$(got a signing.signing)" = true ]; then ok "A's status: signing"; else bad "A's status does not say it signs"; fi
if [ "$(got a hci.longPayloadsSkipped)" = 0 ]; then ok "A's controller carried the 201-byte advert (none skipped)"
else bad "A skipped long payloads: $(got a hci.longPayloadsSkipped)"; fi
if [ "$(got b signing.clock)" = none ]; then ok "B, not synchronised, does not take its time from one box"
else bad "B's clock source: $(got b signing.clock)"; fi

echo "2. forged, impersonating, stripped and replayed frames are refused and counted"
now=$(date +%s)
# Every frame of steps 2 and 3 from one start of the independent implementation.
frame() { echo "--frame $NET_SEED $STRANGER_SEED $STRANGER $*"; }
{ read -r valid; read -r in_a_name; read -r rogue; read -r other; read -r day_old; read -r revocation; read -r after_revocation
  read -r eighth; read -r ninth; } < <(
  { frame sos "$STRANGER" 1 $((now + 3600)) "$now" 1
    frame sos "$A_ID" 7 $((now + 3600)) "$now" 1
    echo "--frame $ROGUE_NET_SEED $STRANGER_SEED $STRANGER sos $STRANGER 2 $((now + 3600)) $now 1"
    # The stranger's certificate, the signature made with another key.
    echo "--frame $NET_SEED $OTHER_SEED $STRANGER sos $STRANGER 3 $((now + 3600)) $now 1"
    frame sos "$STRANGER" 4 $((now + 3600)) $((now - 86400)) 1
    echo "--revocation $NET_SEED $STRANGER_SEED $STRANGER $now"
    frame sos "$STRANGER" 5 $((now + 3600)) "$now" 1
    frame sos "$STRANGER" 8 $((now + 3600)) "$now" 1
    frame sos "$STRANGER" 9 $((now + 3600)) "$now" 1
  } | $SIGN --batch)
[ -n "$ninth" ] || { bad "scripts/signed-frame-vectors --batch made no frames"; finish; }
# Each refused frame has an alert id of its own, so the log shows whether any was taken.
wrong_key="${eighth:0:$(( ${#eighth} - 128 ))}${other: -128}"
stripped="${ninth:0:$(( ${#ninth} - 128 ))}"
REFUSALS="impersonations forgedCertificates forged malformed tooOld"
# refused HEX COUNTER WHAT: B, hearing only this frame, counts it under COUNTER and under no other refusal.
refused() {
  local c before after others=""
  eval "$(air_counters b before_)"
  send "$1"
  eval "$(air_counters b after_)"
  for c in $REFUSALS; do
    eval "before=\${before_$c:-0} after=\${after_$c:-0}"
    if [ "$c" = "$2" ]; then [ "$after" -gt "$before" ] || others+=" $c stayed $before"
    elif [ "$after" != "$before" ]; then others+=" $c $before->$after"; fi
  done
  if [ -z "$others" ]; then ok "B refused $3 ($2: $(eval "echo \${after_$2}"))"; else bad "B did not refuse $3 as $2 alone:$others"; fi
}
refused "$in_a_name" impersonations "a frame raising an alert in A's name, signed by another box"
refused "$rogue" forgedCertificates "a certificate the network did not sign"
refused "$wrong_key" forged "a frame signed by another box's key"
refused "$stripped" malformed "a frame with its signature stripped"
refused "$day_old" tooOld "a day-old replay"
send "$valid"
if wait_ms 15000 has_event b alert-received "\"origin\":\"$((16#$STRANGER))\""; then ok "a valid frame from a box B never heard of is logged"
else bad "B did not log the stranger's valid frame"; show b; fi
events b alert-received > "$SCRATCH/b.received"
refused_logged=$(grep -cE '"counter":(2|3|4|7|8|9)[,}]' "$SCRATCH/b.received")
if [ "$refused_logged" = 0 ]; then ok "nothing refused is in B's log"; else bad "$refused_logged refused frames are in B's log"; fi

echo "3. a revocation heard on the air is kept, believed and relayed"
before_revoked=$(got b air.revoked)
send "$revocation" "$after_revocation"
kept() { grep -q "${revocation:4}" "$SCRATCH/$1/revocations" 2>/dev/null; }
if wait_ms 10000 kept b; then ok "B keeps the revocation ($SCRATCH/b/revocations)"; else bad "B did not keep the revocation"; show b; fi
if wait_ms 10000 grew b revoked "${before_revoked:-0}"; then ok "B refuses the revoked box's next frame (revoked: $(got b air.revoked))"
else bad "B did not refuse the revoked box"; show b; fi
# The revoked box's new SOS (5), heard for a second: any frame of it B believed would be logged.
# (The count above may also grow with A relaying the stranger's first SOS, which B now refuses too.)
if has_event b alert-received '"counter":5[,}]'; then bad "the revoked box's new SOS was logged"
else ok "the revoked box's new SOS is not in B's log"; fi
if wait_ms 20000 kept a; then ok "A learned the revocation from B, which advertises what it knows"; else bad "A did not hear the revocation from B"; show a; fi
stop a; stop b

echo "4. a box six hours behind accepts a fresh frame and refuses a day-old one"
real=$(date +%s)
TIME_SHIFT=21600
date -s "@$(( real - TIME_SHIFT ))" >/dev/null || { bad "cannot set the VM's clock"; finish; }
start c
if ! wait_ms 60000 on c; then bad "C's radio did not come on"; show c; finish; fi
real=$(( $(date +%s) + TIME_SHIFT ))
{ read -r old; read -r fresh; read -r second; } < <(
  { frame flood "$STRANGER" 11 $((real + 3600)) $((real - 86400)) 1
    echo "--frame $NET_SEED $OTHER_SEED 51570002 flood 51570002 12 $((real + 3600)) $real 1"
    frame flood "$STRANGER" 13 $((real + 3600)) "$real" 1
  } | $SIGN --batch)
before_old=$(counter c tooOld)
send "$old"
if wait_ms 10000 grew c tooOld "${before_old:-0}"; then ok "C refuses the day-old frame before it knows the time"; else bad "C did not refuse the day-old frame"; show c; fi
send "$fresh" "$second"
if wait_ms 10000 has_event c alert-received '"counter":12[,}]'; then ok "C accepts a fresh frame, six hours ahead of its clock"
else bad "C refused a fresh frame"; show c; fi
snap c
if [ "$(got c signing.clock)" = frame ]; then ok "C's time now comes from two boxes that agree"; else bad "C's clock: $(got c signing.clock)"; fi
before_old=$(got c air.tooOld)
send "$old"
if wait_ms 10000 grew c tooOld "${before_old:-0}"; then ok "C still refuses the day-old frame"; else bad "C did not refuse the day-old frame again"; show c; fi
if has_event c alert-received '"counter":11[,}]'; then bad "the day-old frame was logged"; fi
stop c
restore_clock
finish
