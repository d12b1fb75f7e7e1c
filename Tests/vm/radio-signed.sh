#!/usr/bin/env bash
# NOT RUN (scripts/vm-test runs only Tests/vm/*.sh): Debian 12's BlueZ emulator (btvirt 5.66)
# aborts as soon as a controller advertises more than 31 bytes with the extended commands (its
# report buffer holds 24 + 31 bytes; fixed upstream in 2025, "MAX_EXT_ADV_LEN"), and signed frames
# are 201 bytes. Tried on 2026-11-29: A's first signed advert killed btvirt. This test runs as is
# with an emulator that carries 251-byte extended adverts (Debian 13's BlueZ, or a controller on
# /dev/vhci of our own); until then the same cases are unit tests (SignedFrameTests,
# SignedAirTests, HCIRadioTests). See docs/signed-frames.md "Not yet".
#
# Signed frames on a real kernel (docs/signed-frames.md): three Bluetooth 5 controllers from
# BlueZ's emulator (extended advertising). A and B are certified boxes of one network (no shelter
# key); the third controller sends frames made by hand with the independent implementation
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
. "$(dirname "$0")/../lib/common.bash"

command -v hcitool >/dev/null || { echo "SKIPPED: no hcitool in the VM"; exit 77; }
python3 -c "from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey" 2>/dev/null ||
  { bad "python3 has no cryptography (Debian's python3-cryptography; scripts/setup installs it)"; finish; }
SIGN="python3 ${VIGIL_REPO:-$(dirname "$0")/../../..}/scripts/signed-frame-vectors"

before=$(ls /sys/class/bluetooth | sort)
btvirt -l3 >/dev/null 2>&1 &
BACKGROUND+=("$!")
new_adapters() { comm -13 <(echo "$before") <(ls /sys/class/bluetooth | sort) | grep -c '^hci' | grep -q '^3$'; }
if ! wait_ms 10000 new_adapters; then bad "btvirt -l3 made no three new controllers"; finish; fi
read -r X Y Z < <(comm -13 <(echo "$before") <(ls /sys/class/bluetooth | sort) | tr '\n' ' ')
hciconfig "$Z" up 2>/dev/null || true
ok "three Bluetooth 5 controllers: $X (A), $Y (B), $Z (frames made by hand)"

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
status_json() { "$VIGIL" status --json --data "$SCRATCH/$1" 2>/dev/null; }
# live SECTION.FIELD of a node's status (air.forged, signing.clock, hci.longPayloadsSkipped)
live() { status_json "$1" | python3 -c 'import json, sys
v = json.load(sys.stdin)["live"]
for k in sys.argv[1].split("."): v = (v or {}).get(k)
print("" if v is None else str(v).lower())' "$2" 2>/dev/null; }
counter() { live "$1" "air.$2"; }
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

# send HEX...: each frame as Z's extended advertisement (non-connectable, properties 0), about a second each.
send() {
  hcitool -i "$Z" cmd 0x08 0x0039 00 00 >/dev/null 2>&1 || true
  hcitool -i "$Z" cmd 0x08 0x0036 00 00 00 a0 00 00 a0 00 00 07 00 00 00 00 00 00 00 00 00 7f 01 00 01 00 00 >/dev/null ||
    { bad "hcitool could not set $Z's extended advertising parameters"; return 1; }
  local frame data length
  for frame in "$@"; do
    data="$(printf '%02x' $(( ${#frame} / 2 + 3 )))16f1fc$frame"
    length=$(printf '%02x' $(( ${#data} / 2 )))
    hcitool -i "$Z" cmd 0x08 0x0039 00 00 >/dev/null 2>&1 || true
    hcitool -i "$Z" cmd 0x08 0x0037 00 03 01 "$length" $(echo "$data" | sed 's/../& /g') >/dev/null ||
      { bad "hcitool could not set $Z's advertising data"; return 1; }
    hcitool -i "$Z" cmd 0x08 0x0039 01 01 00 00 00 00 >/dev/null
    sleep 1
  done
  hcitool -i "$Z" cmd 0x08 0x0039 00 00 >/dev/null 2>&1 || true
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
if [ "$(live a signing.signing)" = true ]; then ok "A's status: signing"; else bad "A's status does not say it signs"; fi
if [ "$(live a hci.longPayloadsSkipped)" = 0 ]; then ok "A's controller carried the 201-byte advert (none skipped)"
else bad "A skipped long payloads: $(live a hci.longPayloadsSkipped)"; fi
if [ "$(live b signing.clock)" = none ]; then ok "B, not synchronised, does not take its time from one box"
else bad "B's clock source: $(live b signing.clock)"; fi

echo "2. forged, impersonating, stripped and replayed frames are refused and counted"
now=$(date +%s)
frame() { $SIGN --frame "$NET_SEED" "$STRANGER_SEED" "$STRANGER" "$@"; }
valid=$(frame sos "$STRANGER" 1 $((now + 3600)) "$now" 1)
in_a_name=$(frame sos "$A_ID" 7 $((now + 3600)) "$now" 1)
rogue=$($SIGN --frame "$ROGUE_NET_SEED" "$STRANGER_SEED" "$STRANGER" sos "$STRANGER" 2 $((now + 3600)) "$now" 1)
# The stranger's certificate, the signature made with another key.
other=$($SIGN --frame "$NET_SEED" "$OTHER_SEED" "$STRANGER" sos "$STRANGER" 3 $((now + 3600)) "$now" 1)
wrong_key="${valid:0:$(( ${#valid} - 128 ))}${other: -128}"
stripped="${valid:0:$(( ${#valid} - 128 ))}"
day_old=$(frame sos "$STRANGER" 4 $((now + 3600)) $((now - 86400)) 1)
for c in impersonations forgedCertificates forged malformed tooOld accepted; do eval "before_$c=$(counter b $c)"; done
send "$in_a_name" "$rogue" "$wrong_key" "$stripped" "$day_old" "$valid"
check_counter() { # check_counter COUNTER WHAT
  local before; eval "before=\$before_$1"
  if wait_ms 10000 grew b "$1" "${before:-0}"; then ok "B refused $2 ($1: $(counter b "$1"))"; else bad "B did not count $2 ($1 stays ${before:-0})"; fi
}
check_counter impersonations "a frame raising an alert in A's name, signed by another box"
check_counter forgedCertificates "a certificate the network did not sign"
check_counter forged "a frame signed by another box's key"
check_counter malformed "a frame with its signature stripped"
check_counter tooOld "a day-old replay"
if wait_ms 10000 has_event b alert-received "\"origin\":\"$((16#$STRANGER))\""; then ok "a valid frame from a box B never heard of is logged"
else bad "B did not log the stranger's valid frame"; show b; fi
for counter_ in 2 3 4; do
  if has_event b alert-received "\"counter\":$counter_[,}]"; then bad "a refused frame (counter $counter_) was logged"; fi
done
if has_event b alert-received "\"counter\":7[,}]"; then bad "the frame in A's name was logged"; else ok "nothing refused is in B's log"; fi

echo "3. a revocation heard on the air is kept, believed and relayed"
revocation=$($SIGN --revocation "$NET_SEED" "$STRANGER_SEED" "$STRANGER" "$now")
before_revoked=$(counter b revoked)
send "$revocation" "$(frame sos "$STRANGER" 5 $((now + 3600)) "$now" 1)"
kept() { grep -q "${revocation:4}" "$SCRATCH/$1/revocations" 2>/dev/null; }
if wait_ms 10000 kept b; then ok "B keeps the revocation ($SCRATCH/b/revocations)"; else bad "B did not keep the revocation"; show b; fi
if wait_ms 10000 grew b revoked "${before_revoked:-0}"; then ok "B refuses the revoked box's next frame (revoked: $(counter b revoked))"
else bad "B did not refuse the revoked box"; show b; fi
if has_event b alert-received '"counter":5[,}]'; then bad "the revoked box's frame was logged"; fi
if wait_ms 20000 kept a; then ok "A learned the revocation from B, which advertises what it knows"; else bad "A did not hear the revocation from B"; show a; fi
stop a; stop b

echo "4. a box six hours behind accepts a fresh frame and refuses a day-old one"
real=$(date +%s)
TIME_SHIFT=21600
date -s "@$(( real - TIME_SHIFT ))" >/dev/null || { bad "cannot set the VM's clock"; finish; }
start c
if ! wait_ms 60000 on c; then bad "C's radio did not come on"; show c; finish; fi
real=$(( $(date +%s) + TIME_SHIFT ))
old=$(frame flood "$STRANGER" 11 $((real + 3600)) $((real - 86400)) 1)
fresh=$($SIGN --frame "$NET_SEED" "$OTHER_SEED" 51570002 flood 51570002 12 $((real + 3600)) "$real" 1)
second=$(frame flood "$STRANGER" 13 $((real + 3600)) "$real" 1)
before_old=$(counter c tooOld)
send "$old"
if wait_ms 10000 grew c tooOld "${before_old:-0}"; then ok "C refuses the day-old frame before it knows the time"; else bad "C did not refuse the day-old frame"; show c; fi
send "$fresh" "$second"
if wait_ms 10000 has_event c alert-received '"counter":12[,}]'; then ok "C accepts a fresh frame, six hours ahead of its clock"
else bad "C refused a fresh frame"; show c; fi
if [ "$(live c signing.clock)" = frame ]; then ok "C's time now comes from two boxes that agree"; else bad "C's clock: $(live c signing.clock)"; fi
before_old=$(counter c tooOld)
send "$old"
if wait_ms 10000 grew c tooOld "${before_old:-0}"; then ok "C still refuses the day-old frame"; else bad "C did not refuse the day-old frame again"; show c; fi
if has_event c alert-received '"counter":11[,}]'; then bad "the day-old frame was logged"; fi
stop c
restore_clock
finish
