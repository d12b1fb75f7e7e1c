#!/usr/bin/env bash
# Box A and box B (issue 14's must-hold): two `vigil run`s on emulated controllers, both serving
# GATT; A opens its chat link to B as a central (`vigil chat connect`), as BTFinder does.
#  1. the link is up on both sides (link-changed: central at A, peripheral at B)
#  2. they chat both ways: A writes B's chat RX, B notifies A's subscription on chat TX
#  3. unread counts at B go 1, 2, ... 99 and then "..." as A keeps writing; `vigil chat open`
#     resets them; the disconnect clears A's unread count at B, and both show it not connected
#  4. an SOS raised at B during the chat still reaches A over the air
#  5. connecting to another device closes the first link (one at a time): A's link to B is
#     closed with the reason, when A is asked to connect to a third address
#  6. gatt_notify_rtt_p99_ms: B opens its link to A; 100 messages sent at A reach B as
#     notifications; the delay from A's event to B's (one clock: one VM) as a JSON line
. "$(dirname "$0")/lib/common.bash"
[ -e /sys/class/bluetooth/hci2 ] || { bad "this test needs three controllers (scripts/radio-vm -n 3)"; finish; }

address_of() { hciconfig "$1" | grep -o 'BD Address: [0-9A-F:]*' | cut -d' ' -f3; }
A_ADDR=$(address_of hci0)
B_ADDR=$(address_of hci1)
OTHER_ADDR=$(address_of hci2)
[ -n "$A_ADDR" ] && [ -n "$B_ADDR" ] || { bad "no controller addresses"; finish; }

"$VIGIL" radio keygen --out "$SCRATCH/shelter.key" >/dev/null || { bad "keygen failed"; finish; }
config() { # config NAME ADAPTER
  cat > "$SCRATCH/$1.yaml" <<YAML
data: $SCRATCH/$1
board: sim
radio:
  adapter: $2
  channel: raw
  scan_window: 1s
  advertise:
    rotation_slot: 300ms
  alerts:
    key_file: $SCRATCH/shelter.key
simulation:
  advertisers: 0
connections:
  enabled: true
  name: box $1
  message_burst: 200   # the test writes 100 messages as fast as the CLI goes
YAML
}
config a hci0
config b hci1

events() { "$VIGIL" log tail --json -n 100000 --kind "$2" --data "$SCRATCH/$1" 2>/dev/null; }
has_event() { events "$1" "$2" | grep -q -- "${3:-.}"; }
count() { events "$1" "$2" | grep -c -- "${3:-.}" || true; }
start() {
  "$VIGIL" run --config "$SCRATCH/$1.yaml" >> "$SCRATCH/$1.log" 2>&1 &
  BACKGROUND+=("$!")
}
show_log() { echo "     --- $1's output:"; tail -n 30 "$SCRATCH/$1.log" | sed 's/^/     | /'; }
radio_on() { has_event "$1" radio-state-changed 'RADIO_STATE_ON'; }
serving() { has_line "$SCRATCH/$1.log" "serving GATT"; }
chats() { "$VIGIL" chat list --data "$SCRATCH/$1" 2>&1; }
chat() { "$VIGIL" chat "$@" 2>&1; }
line_for() { chats "$1" | grep "^$2"; }

start a
start b
if wait_ms 60000 radio_on a && wait_ms 60000 radio_on b && wait_ms 30000 serving a && wait_ms 30000 serving b; then
  ok "A ($A_ADDR) and B ($B_ADDR) are up and serve GATT"
else
  bad "the boxes did not come up"; show_log a; show_log b; finish
fi

echo "1. A connects to B"
out=$(chat connect "$B_ADDR" --data "$SCRATCH/a")
check "vigil chat connect is taken ($out)" grep -q "^connecting" <<< "$out"
check "A shows B connected" wait_ms 30000 eval 'line_for a "$B_ADDR" | grep -q "  connected"'
check "B shows A connected" wait_ms 10000 eval 'line_for b "$A_ADDR" | grep -q "  connected"'
check "A logs its link as central, B as peripheral" eval 'has_event a link-changed LINK_ROLE_CENTRAL && has_event b link-changed LINK_ROLE_PERIPHERAL'
ready() { "$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep -q "chat link to $B_ADDR (ready)"; }
check "A's link is ready (chat service found, TX subscribed)" wait_ms 20000 ready
[ "$FAILED" -eq 0 ] || { show_log a; show_log b; finish; }

echo "2. both ways"
out=$(chat send "$B_ADDR" "hello B, this is A" --data "$SCRATCH/a")
check "A sends ($out)" grep -q "^sent" <<< "$out"
check "B has it, unread 1" wait_ms 10000 eval 'line_for b "$A_ADDR" | grep -q "unread 1$"'
check "B logs it from A" has_event b chat-message "hello B, this is A"
out=$(chat send "$A_ADDR" "hello A, B here" --data "$SCRATCH/b")
check "B sends ($out)" grep -q "^sent" <<< "$out"
check "A has it as a notification, unread 1" wait_ms 10000 eval 'line_for a "$B_ADDR" | grep -q "unread 1$"'
check "A logs it from B" has_event a chat-message "hello A, B here"

echo "3. unread 1..99, then ..."
out=$(seq 2 99 | sed 's/^/message /' | chat send "$B_ADDR" - --data "$SCRATCH/a")
check "A sends 98 more, one a line of its standard input ($out)" grep -q "^sent 98 messages" <<< "$out"
check "B shows unread 99" wait_ms 20000 eval 'line_for b "$A_ADDR" | grep -q "unread 99$"'
chat send "$B_ADDR" "message 100" --data "$SCRATCH/a" > /dev/null
check "and at 100, \"...\"" wait_ms 10000 eval 'line_for b "$A_ADDR" | grep -q "unread \.\.\.$"'
chat open "$A_ADDR" --data "$SCRATCH/b" > /dev/null
check "vigil chat open at B resets it" wait_ms 5000 eval 'line_for b "$A_ADDR" | grep -q "  connected  [0-9]* messages$"'
chat send "$B_ADDR" "after opening" --data "$SCRATCH/a" > /dev/null
check "a new message counts from 1" wait_ms 10000 eval 'line_for b "$A_ADDR" | grep -q "unread 1$"'

echo "4. an SOS during the chat"
"$VIGIL" alert raise sos --expires 1h --data "$SCRATCH/b" > "$SCRATCH/raise.out" 2>&1 || bad "vigil alert raise failed: $(cat "$SCRATCH/raise.out")"
check "A hears B's SOS over the air while linked" wait_ms 30000 has_event a alert-received '"kind":"SOS"'
check "the link is still up" eval 'line_for a "$B_ADDR" | grep -q "  connected"'

echo "5. disconnect, and one link at a time"
out=$(chat disconnect "$B_ADDR" --data "$SCRATCH/a")
check "A disconnects ($out)" grep -q "^disconnected" <<< "$out"
check "B shows A not connected, and its unread count cleared" wait_ms 15000 eval 'line_for b "$A_ADDR" | grep -q "not connected  [0-9]* messages$"'
check "A shows B not connected" wait_ms 5000 eval 'line_for a "$B_ADDR" | grep -q "not connected"'
chat connect "$B_ADDR" --data "$SCRATCH/a" > /dev/null
check "A connects again" wait_ms 30000 ready
chat connect "$OTHER_ADDR" --data "$SCRATCH/a" > /dev/null
check "choosing another device closes the link to B" wait_ms 10000 has_event a link-changed "another device was chosen"
# The kernel disconnects the LE link once its last channel is closed, after the connection
# attempt to the other device it has queued (up to its 20 s connect timeout).
check "B sees it closed" wait_ms 45000 eval 'line_for b "$A_ADDR" | grep -q "not connected"'
echo "6. gatt_notify_rtt_p99_ms: a message sent at A reaching B as a notification (B's link to A)"
chat disconnect "$OTHER_ADDR" --data "$SCRATCH/a" > /dev/null   # A's attempt at a device that is not there
chat connect "$A_ADDR" --data "$SCRATCH/b" > /dev/null
b_ready() { "$VIGIL" status --data "$SCRATCH/b" 2>&1 | grep -q "chat link to $A_ADDR (ready)"; }
if wait_ms 30000 b_ready; then ok "B connects to A"; else bad "B did not connect to A"; show_log a; show_log b; finish; fi
seq 1 100 | sed 's/^/rtt /' | chat send "$B_ADDR" - --data "$SCRATCH/a" > /dev/null || bad "sending the 100 messages failed"
arrived() { [ "$(count b chat-message '"text":"rtt ')" -ge 100 ]; }
check "all 100 arrive at B" wait_ms 20000 arrived
times() { events "$1" chat-message | sed -n 's/.*"time_us":\([0-9]*\).*"text":"rtt \([0-9]*\)".*/\2 \1/p' | sort -k1,1; }
join <(times a) <(times b) | awk '{ printf "%.3f\n", ($3 - $2) / 1000 }' | sort -n > "$SCRATCH/rtt.ms"
n=$(wc -l < "$SCRATCH/rtt.ms")
p50=$(sed -n "$(( (n + 1) / 2 ))p" "$SCRATCH/rtt.ms"); p99=$(sed -n "$(( (n * 99 + 99) / 100 ))p" "$SCRATCH/rtt.ms")
check "100 delays measured ($n)" [ "$n" = 100 ]
[ "$n" -gt 0 ] || finish
# For scale, step 4's SOS over the air (advertising, not GATT): B's alert-raised to A's alert-received.
sos_raised=$(events b alert-raised '"kind":"SOS"' | tail -n 1 | sed -n 's/.*"time_us":\([0-9]*\).*/\1/p')
sos_heard=$(events a alert-received '"kind":"SOS"' | head -n 1 | sed -n 's/.*"time_us":\([0-9]*\).*/\1/p')
air_ms=$(awk -v a="$sos_raised" -v b="$sos_heard" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
echo "     {\"metric\":\"gatt_notify_rtt_p99_ms\",\"value\":$p99,\"unit\":\"ms\",\"p50_ms\":$p50,\"max_ms\":$(tail -n 1 "$SCRATCH/rtt.ms"),\"messages\":$n,\"sos_over_the_air_ms\":$air_ms,\"from\":\"a message's time at A (when notified) to its event at B, one clock (one VM, emulated controllers)\"}"
check "every delay is positive (A's time is taken before the notification goes out)" eval '[ "$(head -n 1 "$SCRATCH/rtt.ms" | tr -d -c -)" = "" ]'
echo "     A: $("$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep -m1 "^connections:")"
echo "     B: $("$VIGIL" status --data "$SCRATCH/b" 2>&1 | grep -m1 "^connections:")"
finish
