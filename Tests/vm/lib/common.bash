# Shared helpers for Tests/vm/*.sh. Sourced, never run: scripts/vm-test runs only Tests/vm/*.sh.
#
# Environment (set by scripts/vm-test, passed into the VM by scripts/radio-vm):
#   VIGIL       absolute path of the vigil binary under test
#   VIGIL_REPO  the repository root (board/vm.yaml lives there)
#   GPIO_SIM    the gpio-sim chip's simulator attributes (scripts/radio-vm -g)
#   TMPDIR      a tmpfs inside the VM (LMDB cannot map files over 9p)
set -u

: "${VIGIL:?VIGIL must name the vigil binary}"
: "${VIGIL_REPO:?VIGIL_REPO must name the repository root}"
: "${GPIO_SIM:?GPIO_SIM is unset: run inside scripts/radio-vm -g 8}"
BOARD="$VIGIL_REPO/board/vm.yaml"
SCRATCH=$(mktemp -d)
BACKGROUND=()

cleanup() {
  local pid
  for pid in "${BACKGROUND[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
. "$(dirname "${BASH_SOURCE[0]}")/checks.bash"

# The simulated wiring. Line 0 is the button (active low): pull-down = pressed.
pull() { echo "$2" > "$GPIO_SIM/sim_gpio$1/pull"; }
press() { pull 0 pull-down; }
release() { pull 0 pull-up; }
level() { cat "$GPIO_SIM/sim_gpio$1/value"; }



has_line() { grep -q -- "$2" "$1" 2>/dev/null; }

# sensor_adapter INDEX on|off: hciINDEX as a heart-rate strap's controller is: the kernel's
# security manager running (the kernel registers it only when an adapter is powered on through
# the management channel; scripts/radio-vm powers them up with hciconfig), Just Works, Secure
# Connections, bonding on or off. BlueZ's btmgmt talks to the kernel directly (no bluetoothd);
# it quits before the kernel answers when its standard input is at its end, so that stays open.
# box_adapter INDEX: the box's adapter powered on through the management channel, as the box
# does it (so the kernel's security manager runs on it).
# btmgmt_each INDEX COMMAND...: each COMMAND (words split) to hciINDEX, one after another.
btmgmt_each() {
  local index=$1 c
  shift
  for c in "$@"; do
    # shellcheck disable=SC2086
    sleep 1 | timeout 10 btmgmt --index "$index" $c 2>&1 | head -n 1 | sed 's/^/     btmgmt: /'
  done
}
box_adapter() { btmgmt_each "$1" "power off" "power on"; }
sensor_adapter() { btmgmt_each "$1" "power off" "bondable $2" "io-cap 3" "sc on" "power on"; }

# A board profile file: profile NAME CHIP BUTTON_LINE [key: value lines for outputs...]
profile() {
  local file="$SCRATCH/$1.yaml"
  { echo "name: $1"; echo "chip: $2"; echo "button: {line: $3, active_low: true}"
    shift 3
    if [ $# -gt 0 ]; then echo "outputs:"; for o in "$@"; do echo "  $o"; done; fi
  } > "$file"
  chmod 644 "$file"
  echo "$file"
}

# JSON field of one flat JSON line (numbers, booleans, strings without escapes).
field() {
  local line=$1 key=$2
  if [[ "$line" =~ \"$key\":\"([^\"]*)\" ]]; then echo "${BASH_REMATCH[1]}"
  elif [[ "$line" =~ \"$key\":([^,}]*) ]]; then echo "${BASH_REMATCH[1]}"
  else return 1; fi
}

# sample LINE SECONDS: the line's level about every 10 ms, as a string of 0s and 1s. No forks
# in the loop (builtin read, EPOCHREALTIME, a read timeout instead of sleep): under emulation a
# fork costs tens of milliseconds, too slow for a 200 ms blink.
sample() {
  [ -n "${TICK:-}" ] || exec {TICK}<> <(:)   # a descriptor that never has input: the read times out
  local out="" v now end=$(( ${EPOCHREALTIME/./} + $2 * 1000000 ))
  while now=${EPOCHREALTIME/./}; [ "$now" -lt "$end" ]; do
    read -r v < "$GPIO_SIM/sim_gpio$1/value"; out+=$v
    read -t 0.01 -u "$TICK" _ || :
  done
  echo "$out"
}
# runs STRING: how many runs of 1s it has (rising edges, counting a leading 1).
runs() { echo "$1" | grep -o '1\+' | grep -c . || true; }
# ones STRING: how many samples were 1.
ones() { local s=${1//0/}; echo ${#s}; }
# between VALUE LOW HIGH: one command, so `check` sees both bounds.
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
