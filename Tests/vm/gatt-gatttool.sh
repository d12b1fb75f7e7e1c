#!/usr/bin/env bash
# The box's GATT server (VigilGATT on the kernel's ATT channel, `vigil debug gatt-serve`) held
# against an independent client, BlueZ's gatttool, over an LE link between two emulated
# controllers (hci0 the phone, hci1 the box advertising connectable):
#  1. primary services and characteristics as gatttool discovers them: GAP, GATT, the chat
#     service with BTFinder's UUIDs, the Nordic UART Service, Vigil's messages
#  2. a read (the device name), a read refused (RX is write-only) and an invalid handle
#  3. writes to chat RX and UART RX, one longer than the default MTU (gatttool's long write:
#     prepared writes and an execute), each reaching the box whole
#  4. a subscription to chat TX, then a notification from the box reaching gatttool
. "$(dirname "$0")/lib/common.bash"
command -v gatttool >/dev/null || { echo "SKIPPED: no gatttool in the VM"; exit 77; }

BOX=hci1
PHONE=hci0
ADDR=$(hciconfig "$BOX" | grep -o 'BD Address: [0-9A-F:]*' | cut -d' ' -f3)
[ -n "$ADDR" ] || { bad "no address for $BOX"; finish; }

mkfifo "$SCRATCH/in"
exec {INPUT}<> "$SCRATCH/in"
"$VIGIL" debug gatt-serve --adapter "$BOX" --name "Vigil VM box" < "$SCRATCH/in" > "$SCRATCH/serve.out" 2>&1 &
BACKGROUND+=("$!")
served() { has_line "$SCRATCH/serve.out" "$1"; }
if wait_ms 30000 served "listening on $ADDR"; then ok "the box listens on the ATT channel of $BOX ($ADDR)"
else bad "gatt-serve did not start"; sed 's/^/     | /' "$SCRATCH/serve.out"; finish; fi

# ADV_IND on the box's controller (the kernel connects only to a connectable advertiser); a
# controller stops advertising once connected, so before every gatttool run.
advertise() {
  hcitool -i "$BOX" cmd 0x08 0x000a 00 >/dev/null 2>&1
  hcitool -i "$BOX" cmd 0x08 0x0006 a0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00 >/dev/null &&
  hcitool -i "$BOX" cmd 0x08 0x0008 03 02 01 06 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 >/dev/null &&
  hcitool -i "$BOX" cmd 0x08 0x000a 01 >/dev/null
}
gatt() { advertise; timeout 30 gatttool -i "$PHONE" -b "$ADDR" "$@" 2>&1; }
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

echo "1. discovery"
primary=$(gatt --primary)
echo "$primary" | sed 's/^/     | /'
check "the chat service (BTFinder's UUID) is handles 0x000a-0x000f" grep -q "attr handle = 0x000a, end grp handle = 0x000f uuid: 7e57c000-2c8f-4f3c-9f91-8577e1891234" <<< "$primary"
check "the Nordic UART Service is found" grep -q "uuid: 6e400001-b5a3-f393-e0a9-e50e24dcca9e" <<< "$primary"
check "Vigil's message service is found" grep -q "uuid: 9f3b0001-5a1c-4c8e-8d2f-6b1e0c7a4d10" <<< "$primary"
check "GAP and GATT come first" grep -q "attr handle = 0x0001, end grp handle = 0x0005 uuid: 00001800" <<< "$primary"
characteristics=$(gatt --characteristics)
check "chat TX notifies at 0x000c" grep -q "char properties = 0x10, char value handle = 0x000c, uuid = 7e57c001-2c8f-4f3c-9f91-8577e1891234" <<< "$characteristics"
check "chat RX is written at 0x000f" grep -q "char properties = 0x0c, char value handle = 0x000f, uuid = 7e57c002-2c8f-4f3c-9f91-8577e1891234" <<< "$characteristics"
check "UART RX is written at 0x0012" grep -q "char value handle = 0x0012, uuid = 6e400002-b5a3-f393-e0a9-e50e24dcca9e" <<< "$characteristics"

echo "2. reads and errors"
name=$(gatt --char-read -a 0x0003)
check "the device name reads back ($name)" grep -q "$(hex "Vigil VM box" | sed 's/../& /g; s/ $//')" <<< "$name"
refused=$(gatt --char-read -a 0x000f)
check "reading chat RX is refused ($refused)" grep -qi "can't be read\|not permitted" <<< "$refused"
invalid=$(gatt --char-read -a 0x0063)
check "an invalid handle is an error ($invalid)" grep -qi "invalid handle" <<< "$invalid"

echo "3. writes"
written=$(gatt --char-write-req -a 0x000f -n "$(hex "hello from gatttool")")
check "a write request to chat RX is answered ($written)" grep -q "written successfully" <<< "$written"
check "the box took the chat message" wait_ms 5000 served "written .* 7E57C002-2C8F-4F3C-9F91-8577E1891234 hello from gatttool"
long="a message longer than one value: water, blankets and insulin at the north door"
written=$(gatt --char-write-req -a 0x0012 -n "$(hex "$long")")
check "a long write to UART RX is answered ($written)" grep -q "written successfully" <<< "$written"
check "the box reassembled the ${#long} bytes whole" wait_ms 5000 served "written .* 6E400002-B5A3-F393-E0A9-E50E24DCCA9E $long"
check "they came as prepared writes (gatttool's long write), not one request" served "prepare-write .* 18 bytes"

echo "4. notifications"
advertise
timeout 30 gatttool -i "$PHONE" -b "$ADDR" --char-write-req -a 0x000d -n 0100 --listen > "$SCRATCH/listen.out" 2>&1 &
LISTENER=$!
BACKGROUND+=("$LISTENER")
if wait_ms 15000 served "subscribed .* 7E57C001-2C8F-4F3C-9F91-8577E1891234 notify=true"; then
  ok "gatttool subscribed to chat TX"
  echo "notify hello back" >&"$INPUT"
  listened() { has_line "$SCRATCH/listen.out" "Notification handle = 0x000c value: $(hex "hello back" | sed 's/../& /g; s/ $//')"; }
  check "the box's notification reached gatttool" wait_ms 10000 listened
else
  bad "gatttool did not subscribe"
fi
kill "$LISTENER" 2>/dev/null
check "no peer broke the protocol" bash -c "! grep -q violation '$SCRATCH/serve.out'"
sed 's/^/     | /' "$SCRATCH/serve.out"
finish
