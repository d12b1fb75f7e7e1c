# Shared by the heart-rate sensor tests (Tests/vm/hr-sensor.sh, Tests/vm/host/hr-sensor-bond.sh):
# box A as `vigil run` on hci0 with its data in $SCRATCH/a, and straps played by
# `vigil debug gatt-serve --profile heart-rate` on other controllers. Sourced after common.bash.

address_of() { hciconfig "$1" | grep -o 'BD Address: [0-9A-F:]*' | cut -d' ' -f3; }

# hr_box_config [LINE...]: A's configuration in $SCRATCH/a.yaml; each LINE is added under
# `connections:` (e.g. "sensor_bonds: true").
hr_box_config() {
  { cat <<YAML
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
YAML
    local line
    for line in "$@"; do echo "  $line"; done
  } > "$SCRATCH/a.yaml"
}
start_a() {
  "$VIGIL" run --config "$SCRATCH/a.yaml" >> "$SCRATCH/a.log" 2>&1 &
  A_PID=$!
  BACKGROUND+=("$A_PID")
}
events() { "$VIGIL" log tail --json -n 100000 --kind "$1" --data "$SCRATCH/a" 2>/dev/null; }
count() { events "$1" | grep -c -- "${2:-.}" || true; }
radio_on() { events radio-state-changed | tail -n 1 | grep -q RADIO_STATE_ON; }

# advertise ADAPTER: ADV_IND from its public address with the Heart Rate service (the kernel
# connects only to a connectable advertiser; a controller stops advertising once a link is made,
# even one that failed its security, so again before each link).
advertise() {
  hcitool -i "$1" cmd 0x08 0x000a 00 >/dev/null 2>&1
  hcitool -i "$1" cmd 0x08 0x0006 a0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00 >/dev/null &&
  hcitool -i "$1" cmd 0x08 0x0008 07 02 01 06 03 03 0d 18 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 >/dev/null &&
  hcitool -i "$1" cmd 0x08 0x000a 01 >/dev/null
}
# start_sensor NAME ADAPTER ADDRESS: a strap on ADAPTER, its output in $SCRATCH/sensor.NAME;
# `notify NAME "72 contact"` sends it a measurement to notify.
declare -A SENSOR_PIDS SENSOR_INS
start_sensor() {
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
notify() { echo "hr $2" >&"${SENSOR_INS[$1]}"; }
subscribed() { has_line "$SCRATCH/sensor.$1" "subscribed .* 2A37 notify=true"; }
# subscribes NAME ADAPTER SECONDS: A subscribes within SECONDS, the strap advertising again
# every few seconds meanwhile.
subscribes() {
  local end=$(( SECONDS + $3 ))
  while [ "$SECONDS" -lt "$end" ]; do
    wait_ms 5000 subscribed "$1" && return 0
    advertise "$2"
  done
  return 1
}
status_of() { "$VIGIL" status --data "$SCRATCH/a" 2>&1 | grep "heart-rate sensor of $1 "; }
sensor_links() { events link-changed | grep LINK_ROLE_SENSOR | grep "\"resident\":\"$1\""; }
show() {
  echo "     --- A's output:"; tail -n 40 "$SCRATCH/a.log" | sed 's/^/     | /'
  local f
  for f in "$SCRATCH"/sensor.*; do [ -e "$f" ] || continue; echo "     --- $f:"; tail -n 15 "$f" | sed 's/^/     | /'; done
}
