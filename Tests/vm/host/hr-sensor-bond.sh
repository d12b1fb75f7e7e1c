#!/usr/bin/env bash
# Heart-rate sensors bonded at enrolment (issue 28, decision 0005). Box A (`vigil run` on hci0)
# links as a central to sensors played by `vigil debug gatt-serve --profile heart-rate`; the
# kernel's security manager on both sides pairs them (Just Works), BlueZ's btmgmt sets what a
# sensor can do, and nothing of bluetoothd runs.
#  1. a sensor that can bond (hci1): A pairs at the first link, keeps the key in DATA/sensor-keys
#     (0600, not in the log) and logs the link bonded; its readings count
#  2. A restarts after the kernel lost the key (unpaired on hci0): A loads the stored key before
#     it links, and the link is bonded again with no new pairing
#  3. staff enrol the sensor again (none, then the address): A pairs afresh and it is bonded
# Not here: a sensor that does not bond (hci2 with bonding off) did not link within the test's
# time in the VM (not yet understood: docs/sensor-bonds.md). And a device at a bonded sensor's
# address without the key. On Debian 12's kernel (6.1)
# the box's closing of that failed link hit a BUG (list corruption in hci_chan_del, from
# l2cap_sock_release) that stopped the loop's thread and would leave the VM's Bluetooth broken
# for the tests after this one: docs/sensor-bonds.md, and why bonds are off by default.
. "$(dirname "$0")/lib/common.bash"

address_of() { hciconfig "$1" | grep -o 'BD Address: [0-9A-F:]*' | cut -d' ' -f3; }
BOX=$(address_of hci0); SENSOR=$(address_of hci1)
[ -n "$BOX" ] && [ -n "$SENSOR" ] || { bad "no addresses for hci0-1"; finish; }
command -v btmgmt >/dev/null || { bad "btmgmt missing from the VM"; finish; }
mgmt() { sleep 1 | timeout 10 btmgmt --index "$1" "${@:2}" 2>&1 | head -n 1 | sed 's/^/     btmgmt: /'; }
box_adapter 0
sensor_adapter 1 on

cat > "$SCRATCH/a.yaml" <<YAML
data: $SCRATCH/a
board: sim
radio:
  adapter: hci0
  channel: raw
  scan_window: 1s
simulation:
  advertisers: 0
connections:
  heart_rate_every: 3s
  sensor_bonds: true
YAML
start_a() {
  "$VIGIL" run --config "$SCRATCH/a.yaml" >> "$SCRATCH/a.log" 2>&1 &
  A_PID=$!
  BACKGROUND+=("$A_PID")
}
events() { "$VIGIL" log tail --json -n 100000 --kind "$1" --data "$SCRATCH/a" 2>/dev/null; }
count() { events "$1" | grep -c -- "${2:-.}" || true; }
radio_on() { events radio-state-changed | tail -n 1 | grep -q RADIO_STATE_ON; }
show() {
  echo "     --- A's output:"; tail -n 40 "$SCRATCH/a.log" | sed 's/^/     | /'
  for f in "$SCRATCH"/sensor.*; do echo "     --- $f:"; tail -n 15 "$f" | sed 's/^/     | /'; done
}
status_of() { "$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep "heart-rate sensor of $1 "; }
sensor_links() { events link-changed | grep LINK_ROLE_SENSOR | grep "\"resident\":\"$1\""; }
bonded_opens() { sensor_links "$1" | grep '"open":true' | grep -c '"bonded":true' || true; }

# A sensor on ADAPTER: ADV_IND from its public address, then the Heart Rate service.
advertise() {
  hcitool -i "$1" cmd 0x08 0x000a 00 >/dev/null 2>&1
  hcitool -i "$1" cmd 0x08 0x0006 a0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00 >/dev/null &&
  hcitool -i "$1" cmd 0x08 0x0008 07 02 01 06 03 03 0d 18 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 >/dev/null &&
  hcitool -i "$1" cmd 0x08 0x000a 01 >/dev/null
}
declare -A SENSOR_PIDS SENSOR_INS
start_sensor() { # start_sensor NAME ADAPTER ADDRESS
  mkfifo "$SCRATCH/in.$1"
  local fd
  exec {fd}<> "$SCRATCH/in.$1"
  SENSOR_INS[$1]=$fd
  "$VIGIL" debug gatt-serve --adapter "$2" --profile heart-rate --accept-pairing --name "HR $1" < "$SCRATCH/in.$1" > "$SCRATCH/sensor.$1" 2>&1 &
  SENSOR_PIDS[$1]=$!
  BACKGROUND+=("$!")
  wait_ms 30000 has_line "$SCRATCH/sensor.$1" "listening on $3" && advertise "$2"
}
stop_sensor() { kill "${SENSOR_PIDS[$1]}" 2>/dev/null; wait "${SENSOR_PIDS[$1]}" 2>/dev/null; }
subscribed() { has_line "$SCRATCH/sensor.$1" "subscribed .* 2A37 notify=true"; }
# A controller stops advertising once a link is made, even one that failed its security: a
# sensor advertises again every few seconds until A subscribes.
subscribes() { # subscribes NAME ADAPTER SECONDS
  local end=$(( SECONDS + $3 ))
  while [ "$SECONDS" -lt "$end" ]; do
    wait_ms 5000 subscribed "$1" && return 0
    advertise "$2"
  done
  return 1
}
notify() { echo "hr $2" >&"${SENSOR_INS[$1]}"; }
key_line() { grep -i "^$SENSOR " "$SCRATCH/a/sensor-keys" 2>/dev/null; }

start_a
if wait_ms 60000 radio_on; then ok "A is up on hci0"; else bad "A did not come up"; show; finish; fi

echo "1. a sensor that can bond"
start_sensor s1 hci1 "$SENSOR" || { bad "gatt-serve did not start on hci1"; show; finish; }
"$VIGIL" resident add r1 --mode pulse --interval 10m --hr-sensor "$SENSOR" --data "$SCRATCH/a" > /dev/null
check "A subscribes to the measurement" wait_ms 90000 subscribed s1
check "A logs the link bonded" wait_ms 10000 eval '[ "$(bonded_opens r1)" -ge 1 ]'
check "A kept the key in DATA/sensor-keys" wait_ms 5000 key_line
check "the key file is 0600" test "$(stat -c %a "$SCRATCH/a/sensor-keys" 2>/dev/null)" = 600
first_key=$(key_line | awk '{print $NF}')
check "the key is not in the log" bash -c "! '$VIGIL' log tail --json -n 100000 --data '$SCRATCH/a' | grep -qi '${first_key:-none}'"
check "status shows it linked and bonded ($(status_of r1))" eval 'status_of r1 | grep -q ": linked, bonded"'
notify s1 "72 contact"
check "its readings count" wait_ms 5000 eval '[ "$(count check-in CHECK_IN_HEART_RATE)" -ge 1 ]'
[ "$FAILED" -eq 0 ] || { show; finish; }

echo "2. A restarts; the kernel forgot the key"
kill "$A_PID"; wait "$A_PID" 2>/dev/null
stop_sensor s1
mgmt 0 unpair -t 1 "$SENSOR"
start_a
check "A is up again" wait_ms 60000 radio_on
start_sensor s2 hci1 "$SENSOR" || bad "gatt-serve did not start again"
check "A links again" wait_ms 90000 subscribed s2
check "and the link is bonded (opened bonded twice now)" wait_ms 10000 eval '[ "$(bonded_opens r1)" -ge 2 ]'
check "with the stored key: the file is unchanged" test "$(key_line | awk '{print $NF}')" = "$first_key"
check "no failure to prove the bond ($(status_of r1))" eval 'status_of r1 | grep -q ": linked, bonded; " && ! status_of r1 | grep -q "failed to prove"'
[ "$FAILED" -eq 0 ] || { show; finish; }

echo "3. staff enrol the sensor again"
stop_sensor s2
"$VIGIL" resident set r1 --hr-sensor none --data "$SCRATCH/a" > /dev/null
check "its key is deleted with it" wait_ms 10000 eval '! key_line'
"$VIGIL" resident set r1 --hr-sensor "$SENSOR" --data "$SCRATCH/a" > /dev/null
advertise hci1
start_sensor s3 hci1 "$SENSOR" || bad "gatt-serve did not start the third time"
check "A pairs afresh and subscribes" subscribes s3 hci1 120
check "the new link is bonded" wait_ms 10000 eval '[ "$(bonded_opens r1)" -ge 3 ]'
check "with a new key" eval '[ -n "$(key_line)" ] && [ "$(key_line | awk "{print \$NF}")" != "$first_key" ]'
[ "$FAILED" -eq 0 ] || { show; finish; }

finish
