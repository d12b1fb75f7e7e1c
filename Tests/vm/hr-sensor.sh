#!/usr/bin/env bash
# A resident's heart-rate sensor (issue 14's must-hold): box A (`vigil run` on hci0) links as a
# central to a sensor played on hci1 by `vigil debug gatt-serve --profile heart-rate` (the Heart
# Rate service 0x180D, measurements 0x2A37 notified with their sensor-contact flags).
#  1. A links to the sensor of a pulse-mode resident by itself (`--hr-sensor`) and subscribes
#  2. readings with skin contact are check-ins from the heart rate (value and flags): they
#     postpone the ladder; while they say the same, one is logged every heart_rate_every
#  3. readings without contact are logged too, and postpone nothing
#  4. the sensor vanishes: the link's end is logged, A tries again with back-off, nothing is
#     logged as a sign of life, and the ladder's prompt comes on time (a minute after the
#     last reading with contact: the shortest interval)
#  5. the sensor comes back: A links again by itself and its readings count again
. "$(dirname "$0")/lib/common.bash"
. "$(dirname "$0")/lib/hr-sensor.bash"

SENSOR=$(address_of hci1)
[ -n "$SENSOR" ] || { bad "no address for hci1"; finish; }

hr_box_config
start_a
if wait_ms 60000 radio_on; then ok "A is up on hci0"; else bad "A did not come up"; show; finish; fi

# notify_for NAME SECONDS WHAT: a measurement about once a second, as a strap sends them.
notify_for() { local i; for ((i = 0; i < $2; i++)); do notify "$1" "$3"; sleep 1; done; }
anchor() { "$VIGIL" resident list --json --data "$SCRATCH/a" | grep -o '"anchorMicroseconds":[0-9]*' | cut -d: -f2; }

echo "1. the link"
if start_sensor 1 hci1 "$SENSOR"; then ok "the sensor serves the Heart Rate service on hci1 ($SENSOR), advertising"; else bad "gatt-serve did not start"; finish; fi
out=$("$VIGIL" resident add r1 --mode pulse --interval 1m --hr-sensor "$SENSOR" --data "$SCRATCH/a" 2>&1)
check "r1 is enrolled in pulse mode with the sensor ($out)" grep -q "^enrolled r1" <<< "$out"
check "A subscribes to the measurement by itself" wait_ms 30000 subscribed 1
check "A logs the link (role sensor, r1)" wait_ms 10000 eval 'events link-changed | grep LINK_ROLE_SENSOR | grep -q "\"open\":true"'
status=$("$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep "heart-rate sensor of r1")
check "vigil status shows it linked ($status)" grep -q ": linked" <<< "$status"
# connections.sensor_bonds is auto: this VM's kernel (Debian 12's 6.1) is not trusted with bonds.
check "and unbonded, saying why (the kernel)" grep -q ": linked, unbonded \[not bonded: Linux 6\.1" <<< "$status"
[ "$FAILED" -eq 0 ] || { show; finish; }

echo "2. readings with skin contact"
enrolled=$(anchor)
notify_for 1 7 "72 contact"
check "readings are check-ins from the heart rate with the value and flags 6" \
  wait_ms 5000 eval 'events check-in | grep CHECK_IN_HEART_RATE | grep "\"value\":72" | grep -q "\"heart_rate_flags\":6"'
logged=$(count check-in CHECK_IN_HEART_RATE)
check "one is logged every 3 s while they say the same (7 readings: $logged logged)" between "$logged" 2 4
after_contact=$(anchor)
check "they postponed the ladder (anchor $enrolled -> $after_contact)" test "$after_contact" -gt "$enrolled"

echo "3. readings without contact"
notify_for 1 5 "72 no-contact"
check "they are logged (flags 4) at once" wait_ms 5000 eval 'events check-in | grep -q "\"heart_rate_flags\":4"'
check "and postpone nothing (anchor still $after_contact)" test "$(anchor)" -eq "$after_contact"

echo "4. the sensor vanishes"
stop_sensor 1
# The last sensor link event is a close ("open" is false, which JSON leaves out).
closed() { events link-changed | grep LINK_ROLE_SENSOR | tail -n 1 | grep -vq '"open":true'; }
check "A logs the link's end" wait_ms 30000 closed
events link-changed | grep LINK_ROLE_SENSOR | tail -n 1 | sed 's/^/     | /'
# Not linked, and at least one attempt since the link that ended (the first attempt made it).
retrying() { "$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep "heart-rate sensor of r1" | grep -E ': (waiting|connecting)' | grep -Eq '([2-9]|[1-9][0-9]+) attempts'; }
check "vigil status shows it not linked, tried again" wait_ms 10000 retrying
"$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep "heart-rate sensor of r1" | sed 's/^/     | /'
before=$(count check-in CHECK_IN_HEART_RATE)
prompted() { events deadline-reached | grep r1 | grep -q LADDER_STEP_PROMPT; }
check "silence is no sign of life: the prompt comes a minute after the last reading with contact" wait_ms 80000 prompted
check "no reading was logged meanwhile" test "$(count check-in CHECK_IN_HEART_RATE)" -eq "$before"
due=$(events deadline-reached | grep r1 | grep LADDER_STEP_PROMPT | head -n 1 | grep -o '"due_us":"\?[0-9]*' | grep -o '[0-9]*$')
check "the prompt was due at that reading + 1 minute ($due)" test "$due" -eq $(( after_contact + 60000000 ))

echo "5. the sensor comes back"
start_sensor 2 hci1 "$SENSOR" || bad "gatt-serve did not start again"
check "A links again by itself (back-off)" wait_ms 60000 subscribed 2
notify_for 2 3 "68 contact"
check "its readings count again: the ladder is reset" wait_ms 5000 eval '"$VIGIL" resident list --data "$SCRATCH/a" | grep -q "r1.*step none"'
check "no peer broke the protocol" bash -c "! grep -q violation '$SCRATCH/sensor.1' '$SCRATCH/sensor.2'"
"$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep "heart-rate sensor of r1" | sed 's/^/     | /'
[ "$FAILED" -eq 0 ] || show
finish
