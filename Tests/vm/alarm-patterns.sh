#!/usr/bin/env bash
# The node on a real GPIO chip (gpio-sim, board/vm.yaml): a bounced long press is one SOS; the
# amber, red and buzzer lines follow their patterns (amber blinks while the button is held, red is
# steady for an SOS, the buzzer plays the SOS tone, 300 ms every 2 s); a short press while the tone
# sounds acknowledges it (buzzer silent, red stays); an 8.5 s hold cancels the SOS (issue 10: a
# second long press only re-affirms it).
. "$(dirname "$0")/lib/common.bash"

release
for n in 1 2 3 4 5; do pull $n pull-down; done
DATA="$SCRATCH/data"
CONFIG="$SCRATCH/vigil.yaml"
printf 'data: %s\nboard: %s\nsimulation:\n  advertisers: 0\n' "$DATA" "$BOARD" > "$CONFIG"
events() { "$VIGIL" log tail --json -n 1000 --kind "$1" --data "$DATA" 2>/dev/null; }
count() { events "$1" | grep -c . || true; }


"$VIGIL" run --config "$CONFIG" --radio sim > "$SCRATCH/node.log" 2>&1 &
NODE=$!
BACKGROUND+=("$NODE")
if ! wait_ms 60000 test -S "$DATA/control.sock"; then
  bad "the node did not start; its output:"; sed 's/^/     | /' "$SCRATCH/node.log"; finish
fi

echo "1. a long press with contact bounce is one SOS; amber blinks while the button is held"
for _ in 1 2 3 4; do pull 0 pull-down; pull 0 pull-up; done   # bounce: 8 edges within a few ms
press
held=$(sample 2 1)                                              # the first second of the hold
sleep 1.6
release
check "amber blinked while the button was held ($held)" [ "$(runs "$held")" -ge 2 ]
check "one alert-raised despite the bounce" wait_ms 10000 bash -c "[ \"\$('$VIGIL' log tail --json -n 100 --kind alert-raised --data '$DATA' | grep -c SOS)\" = 1 ]"
check "every edge was logged ($(count button-input) >= 10)" [ "$(count button-input)" -ge 10 ]
check "red is on" wait_ms 5000 bash -c "[ \"\$(cat $GPIO_SIM/sim_gpio1/value)\" = 1 ]"

echo "2. the buzzer plays the SOS tone: 300 ms every 2 s"
tone=$(sample 5 5)
n=$(runs "$tone"); on=$(ones "$tone"); total=${#tone}
echo "     buzzer: $n tones, on $on of $total samples"
check "2 or 3 tones in 5 s ($n)" between "$n" 2 3
check "on about 15% of the time ($on/$total)" between $((on * 100 / total)) 5 30
redline=$(sample 1 1)
check "red is steady ($redline)" [ "$(ones "$redline")" = "${#redline}" ]

echo "3. a short press while the tone sounds acknowledges it; red stays"
press; sleep 0.3; release
check "alarm-acknowledged is logged" wait_ms 10000 bash -c "'$VIGIL' log tail --json -n 10 --kind alarm-acknowledged --data '$DATA' | grep -q button"
sleep 0.5
quiet=$(sample 5 3)
check "the buzzer stays silent ($quiet)" [ "$(ones "$quiet")" = 0 ]
check "red still on" [ "$(level 1)" = 1 ]

echo "4. an 8.5 s hold cancels the SOS; red goes dark"
press; sleep 8.5; release
check "alert-cancelled is logged" wait_ms 10000 bash -c "'$VIGIL' log tail --json -n 10 --kind alert-cancelled --data '$DATA' | grep -q ."
check "red back to 0" wait_ms 5000 bash -c "[ \"\$(cat $GPIO_SIM/sim_gpio1/value)\" = 0 ]"

kill -TERM "$NODE"; wait "$NODE"; rc=$?
check "SIGTERM stops the node cleanly (exit $rc)" [ "$rc" = 0 ]
[ "$FAILED" = 0 ] || { echo "   node output (last 30 lines):"; tail -n 30 "$SCRATCH/node.log" | sed 's/^/     | /'; }
finish
