#!/usr/bin/env bash
# A resident's own check-in button on a real GPIO chip (gpio-sim): a board profile with
# checkin_buttons, a resident enrolled through the running node, a press on that line → a
# check-in event for that resident with source button; the SOS button is untouched.
. "$(dirname "$0")/lib/common.bash"

release
pull 6 pull-up                       # the check-in button (active low) starts released
for n in 1 2 3 4 5; do pull $n pull-down; done
DATA="$SCRATCH/data"
PROFILE="$SCRATCH/board.yaml"
sed '/^checkin_buttons:/,$d' "$BOARD" > "$PROFILE"
printf 'checkin_buttons:\n  room-7: {line: 6, active_low: true}\n' >> "$PROFILE"
CONFIG="$SCRATCH/vigil.yaml"
printf 'data: %s\nboard: %s\nsimulation:\n  advertisers: 0\n' "$DATA" "$PROFILE" > "$CONFIG"

events() { "$VIGIL" log tail --json -n 1000 --kind "$1" --data "$DATA" 2>/dev/null; }
"$VIGIL" run --config "$CONFIG" --radio sim > "$SCRATCH/node.log" 2>&1 &
NODE=$!
BACKGROUND+=("$NODE")
if ! wait_ms 60000 test -S "$DATA/control.sock"; then
  bad "the node did not start; its output:"; sed 's/^/     | /' "$SCRATCH/node.log"; finish
fi
check "room-7 enrolled through the running node" "$VIGIL" resident add room-7 --interval 4h --data "$DATA"

pull 6 pull-down; sleep 0.3; pull 6 pull-up
check "a check-in event for room-7 from its button" wait_ms 15000 bash -c \
  "'$VIGIL' log tail --json -n 100 --kind check-in --data '$DATA' | grep -q '\"resident\":\"room-7\".*CHECK_IN_BUTTON'"
check "its edges are logged with the check-in role" bash -c \
  "'$VIGIL' log tail --json -n 100 --kind button-input --data '$DATA' | grep -q 'checkin:room-7'"
check "no SOS was raised" [ -z "$(events alert-raised)" ]

kill -TERM "$NODE"; wait "$NODE"; rc=$?
check "SIGTERM stops the node cleanly (exit $rc)" [ "$rc" = 0 ]
finish
