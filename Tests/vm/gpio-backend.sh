#!/usr/bin/env bash
# The libgpiod backend (GPIOBoard) on a real kernel GPIO chip (gpio-sim in the VM), through
# `vigil debug gpio watch|drive`: edges and their kernel timestamps, bounce, outputs and
# active-low, and the messages for a busy line, a missing chip, a bad line and no permission.
. "$(dirname "$0")/lib/common.bash"

release
for n in 1 2 3 4 5; do pull $n pull-down; done

# Starts `watch` in the background with output in $SCRATCH/$1.out; waits for its ready line.
start_watch() {
  local name=$1; shift
  "$VIGIL" debug gpio watch --board "$BOARD" "$@" > "$SCRATCH/$name.out" 2> "$SCRATCH/$name.err" &
  WATCH=$!
  BACKGROUND+=("$WATCH")
  wait_ms 20000 has_line "$SCRATCH/$name.out" '"ready":true' || { bad "$name: watch never became ready: $(cat "$SCRATCH/$name.err")"; return 1; }
}
edges() { grep '"ts_ns"' "$SCRATCH/$1.out"; }

echo "1. a held button: one press edge, one release edge, kernel timestamps 1 s apart"
if start_watch held --count 2 --timeout-ms 30000; then
  check "ready line reports the button released" has_line "$SCRATCH/held.out" '"pressed":false'
  up0=$(uptime_ns)
  t0=$(now_ns); press
  sleep 1
  release; t1=$(now_ns)
  wait "$WATCH"; rc=$?
  up1=$(uptime_ns)
  check "watch exits 0 after 2 edges" [ "$rc" = 0 ]
  mapfile -t E < <(edges held)
  check "exactly 2 edges (got ${#E[@]})" [ "${#E[@]}" = 2 ]
  if [ "${#E[@]}" = 2 ]; then
    check "first edge is the press (pressed: true): ${E[0]}" [ "$(field "${E[0]}" pressed)" = true ]
    check "second edge is the release (pressed: false): ${E[1]}" [ "$(field "${E[1]}" pressed)" = false ]
    check "edges are on line 0" [ "$(field "${E[0]}" line)$(field "${E[1]}" line)" = 00 ]
    a=$(field "${E[0]}" ts_ns); b=$(field "${E[1]}" ts_ns)
    held=$((b - a)); wall=$((t1 - t0))
    echo "     held ${held} ns by the kernel's clock, ${wall} ns between the two writes"
    check "kernel hold >= 1 s (the sleep) - 5 ms" [ "$held" -ge 995000000 ]
    check "kernel hold <= time between the writes + 20 ms" [ "$held" -le $((wall + 20000000)) ]
    check "timestamps are CLOCK_MONOTONIC (within /proc/uptime around the test)" \
      [ "$a" -ge $((up0 - 20000000)) -a "$b" -le $((up1 + 20000000)) ]
  fi
fi

echo "2. bounce: 6 quick press/release pairs give all 12 edges, timestamps increasing"
if start_watch bounce --count 12 --timeout-ms 30000; then
  for _ in 1 2 3 4 5 6; do press; release; done
  wait "$WATCH"; rc=$?
  check "watch exits 0 after 12 edges ($(cat "$SCRATCH/bounce.err"))" [ "$rc" = 0 ]
  mapfile -t E < <(edges bounce)
  check "12 edges (got ${#E[@]})" [ "${#E[@]}" = 12 ]
  increasing=true; prev=0; kinds=""
  for e in "${E[@]}"; do
    ts=$(field "$e" ts_ns); [ "$ts" -gt "$prev" ] || increasing=false; prev=$ts
    [ "$(field "$e" pressed)" = true ] && kinds+=P || kinds+=r
  done
  echo "     edge types in order: $kinds (P = pressed); the kernel samples the level when it handles each interrupt"
  check "timestamps strictly increase" $increasing
  check "the first edge is a press" [ "${kinds:0:1}" = P ]
  check "the last edge is a release (the line ends released)" [ "${kinds: -1}" = r ]
fi

echo "2b. overflow: with the reader stopped, 8 quick pairs fill the kernel's 16-event FIFO, a later"
echo "    press finds no room, and the board reports it from the line's level"
if start_watch overflow --count 16 --timeout-ms 30000; then
  kill -STOP "$WATCH"
  for _ in 1 2 3 4 5 6 7 8; do press; release; done
  sleep 0.3 # the kernel has handled all 16 interrupts: the last one sampled "released"
  press     # no room in the FIFO: dropped
  sleep 0.3
  kill -CONT "$WATCH"
  wait "$WATCH"; rc=$?
  check "watch exits 0 ($(cat "$SCRATCH/overflow.err"))" [ "$rc" = 0 ]
  mapfile -t E < <(edges overflow)
  summary=$(grep '"done"' "$SCRATCH/overflow.out")
  echo "     $summary"
  check "16 edges from the kernel and 1 from the level (got ${#E[@]})" [ "${#E[@]}" = 17 ]
  check "one edge reported as dropped" [ "$(field "$summary" dropped_edges)" = 1 ]
  [ "${#E[@]}" -gt 0 ] && check "the last edge is the press the FIFO had no room for: ${E[-1]}" \
    [ "$(field "${E[-1]}" pressed)" = true ]
  release
fi

echo "3. outputs: each goes to 1 and back to 0; the others stay 0; active_low inverts"
outputs=(red amber green blue buzzer)
coproc DRIVE { "$VIGIL" debug gpio drive --board "$BOARD" 2>&1; }
BACKGROUND+=("$DRIVE_PID")
reply() { local r; IFS= read -r -t 20 r <&"${DRIVE[0]}" && echo "$r"; }
say_to_drive() { echo "$1" >&"${DRIVE[1]}"; reply; }
all_levels() { local s="" n; for n in 1 2 3 4 5; do s+=$(level $n); done; echo "$s"; }
# The first answer also means the driver holds every output (requested off).
r=$(say_to_drive "red off")
check "driver answers: $r" [ "$r" = '{"line":"red","on":false}' ]
check "all outputs start off (levels 1-5: $(all_levels))" [ "$(all_levels)" = 00000 ]
for i in 0 1 2 3 4; do
  name=${outputs[$i]}; n=$((i + 1))
  expect=00000; expect="${expect:0:$i}1${expect:$((i + 1))}"
  r=$(say_to_drive "$name on")
  check "$name on: line $n reads 1, others 0 ($(all_levels))" [ "$(all_levels)" = "$expect" ]
  r=$(say_to_drive "$name off")
  check "$name off: line $n reads 0 ($(all_levels))" [ "$(all_levels)" = 00000 ]
done
r=$(say_to_drive "red on"); r=$(say_to_drive "red on")
check "driving red on twice keeps it on (idempotent): $r" [ "$(level 1)" = 1 ]
eval "exec ${DRIVE[1]}>&-"
wait "$DRIVE_PID"; rc=$?
check "driver exits 0 when its stdin closes" [ "$rc" = 0 ]

low=$(profile low vigil-sim 0 "red: {line: 1, active_low: true}" "amber: {line: 2}")
coproc DRIVE { "$VIGIL" debug gpio drive --board "$low" 2>&1; }
BACKGROUND+=("$DRIVE_PID")
r=$(say_to_drive "amber off")
check "active-low red off drives the pin high (line 1 reads $(level 1))" [ "$(level 1)" = 1 ]
r=$(say_to_drive "red on")
check "active-low red on drives the pin low (line 1 reads $(level 1))" [ "$(level 1)" = 0 ]
r=$(say_to_drive "red off")
check "active-low red off again: pin high (line 1 reads $(level 1))" [ "$(level 1)" = 1 ]
eval "exec ${DRIVE[1]}>&-"
wait "$DRIVE_PID"

echo "   the button with active_low: false reports the pin's own level"
high=$(profile high vigil-sim 0)
sed -i 's/active_low: true/active_low: false/' "$high"
"$VIGIL" debug gpio watch --board "$high" --count 1 --timeout-ms 30000 > "$SCRATCH/high.out" 2>&1 &
WATCH=$!; BACKGROUND+=("$WATCH")
wait_ms 20000 has_line "$SCRATCH/high.out" '"ready":true'
check "released button reads 1 without active_low" has_line "$SCRATCH/high.out" '"pressed":true'
press; wait "$WATCH"; release
check "a press (pin falls) is pressed: false without active_low" [ "$(field "$(edges high)" pressed)" = false ]

echo "4. a line held by another process: the message names chip, line and holder"
"$VIGIL" debug gpio drive --board "$BOARD" --line red --on --hold-ms 30000 > "$SCRATCH/holder.out" 2>&1 &
holder=$!; BACKGROUND+=("$holder")
wait_ms 20000 has_line "$SCRATCH/holder.out" '"line":"red"'
"$VIGIL" debug gpio watch --board "$BOARD" --count 0 > /dev/null 2> "$SCRATCH/busy.err"; rc=$?
echo "     $(cat "$SCRATCH/busy.err")"
check "exit status 1 (got $rc)" [ "$rc" = 1 ]
check "message: line 0 of chip vigil-sim is in use by vigil" has_line "$SCRATCH/busy.err" 'line 0 of chip vigil-sim is in use by vigil'
kill "$holder"; wait "$holder" 2>/dev/null
if command -v gpioset >/dev/null; then
  gpioset --mode=signal vigil-sim 3=1 & gs=$!; BACKGROUND+=("$gs")
  wait_ms 5000 bash -c "[ \"\$(cat $GPIO_SIM/sim_gpio3/value)\" = 1 ]"
  "$VIGIL" debug gpio watch --board "$BOARD" --count 0 > /dev/null 2> "$SCRATCH/busy2.err"; rc=$?
  echo "     $(cat "$SCRATCH/busy2.err")"
  check "gpioset holding line 3 (green): message names gpioset and the green output" \
    grep -q 'line 3 of chip vigil-sim is in use by gpioset, but the board profile wants it for the green' "$SCRATCH/busy2.err"
  kill "$gs"; wait "$gs" 2>/dev/null
else
  echo "     (gpioset not installed: the check with a foreign consumer name is skipped)"
fi
"$VIGIL" debug gpio watch --board "$BOARD" --count 0 > /dev/null 2>&1
check "once the holder is gone the board opens again" [ $? = 0 ]

echo "5. a chip that does not exist, a line out of range, a line used twice"
missing=$(profile missing no-such-chip 0)
"$VIGIL" debug gpio watch --board "$missing" --count 0 > /dev/null 2> "$SCRATCH/missing.err"; rc=$?
echo "     $(cat "$SCRATCH/missing.err")"
check "exit status 1 (got $rc)" [ "$rc" = 1 ]
check "message: no GPIO chip named or labelled no-such-chip" has_line "$SCRATCH/missing.err" 'no GPIO chip named or labelled no-such-chip'
check "message lists the chips there are" has_line "$SCRATCH/missing.err" 'gpiochip0 \[vigil-sim\] (8 lines)'
check "message says to run gpiodetect" has_line "$SCRATCH/missing.err" 'run gpiodetect'
range=$(profile range vigil-sim 40)
"$VIGIL" debug gpio watch --board "$range" --count 0 > /dev/null 2> "$SCRATCH/range.err"; rc=$?
echo "     $(cat "$SCRATCH/range.err")"
check "line 40: out of range, chip has 8 lines (0-7)" has_line "$SCRATCH/range.err" 'line 40 (button) is out of range: chip vigil-sim has 8 lines (0-7)'
twice=$(profile twice vigil-sim 1 "red: {line: 1}")
"$VIGIL" debug gpio watch --board "$twice" --count 0 > /dev/null 2> "$SCRATCH/twice.err"
echo "     $(cat "$SCRATCH/twice.err")"
check "line given to button and red" has_line "$SCRATCH/twice.err" 'line 1 of chip vigil-sim is given to button and red'
for chip in gpiochip0 /dev/gpiochip0 0; do
  byname=$(profile byname vigil-sim 0); sed -i "s|^chip: .*|chip: $chip|" "$byname"
  "$VIGIL" debug gpio watch --board "$byname" --count 0 > "$SCRATCH/byname.out" 2>&1
  check "chip: $chip opens the same chip" has_line "$SCRATCH/byname.out" '"label":"vigil-sim"'
done

echo "6. no permission on /dev/gpiochip0: the message says to join group gpio"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
  ls -l /dev/gpiochip0 | sed 's/^/     /'
  perm=$(profile perm vigil-sim 0)
  chmod 755 "$SCRATCH" # the profile must be readable by nobody; only the chip may refuse
  chown root:root /dev/gpiochip0; chmod 600 /dev/gpiochip0
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$VIGIL" debug gpio watch --board "$perm" --count 0 \
    > /dev/null 2> "$SCRATCH/perm.err"; rc=$?
  echo "     $(cat "$SCRATCH/perm.err")"
  check "exit status 1 (got $rc)" [ "$rc" = 1 ]
  check "message: permission denied opening GPIO chip vigil-sim" has_line "$SCRATCH/perm.err" 'permission denied opening GPIO chip vigil-sim'
  check "message: add the user to group gpio, see board/99-vigil-gpio.rules" \
    grep -q 'add the user to group gpio.*board/99-vigil-gpio.rules' "$SCRATCH/perm.err"
  # What the udev rule does (group gpio, mode 0660) is enough: a member of the group gets in.
  chgrp users /dev/gpiochip0; chmod 660 /dev/gpiochip0
  setpriv --reuid=nobody --regid=nogroup --groups=users "$VIGIL" debug gpio watch --board "$perm" --count 0 \
    > "$SCRATCH/perm.out" 2>&1
  check "with group access (as the udev rule sets it) the same user opens the board" has_line "$SCRATCH/perm.out" '"ready":true'
  chown root:root /dev/gpiochip0; chmod 600 /dev/gpiochip0
else
  echo "     (needs root and setpriv: skipped)"
fi

finish
