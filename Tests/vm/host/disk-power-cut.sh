#!/usr/bin/env bash
# Power cuts, for real: the VM's plug is pulled while the node writes, twice, at different
# moments. A 256 MiB raw image on the host is the VM's disk (scripts/radio-vm -d, QEMU
# cache=writeback: a SIGKILL of QEMU loses the guest's page cache and its writes in flight, and
# keeps every write the guest saw complete). Three boots on the same image:
#   1. mkfs.ext4, mount, `vigil run` with the simulated radio (scan hits: commits all the time)
#      and a client taking check-ins; each acknowledged sequence goes to a host file (over 9p,
#      so it outlives the VM). The host pulls the plug (radio-vm -p) some seconds in.
#   2. mount (ext4 replays its journal), `vigil log check` (exit 0), every check-in
#      acknowledged before the cut in the log; the node starts again (after an unclean stop)
#      and takes check-ins; the plug is pulled again, later in the run.
#   3. the same checks, then one more check-in and a clean stop.
# Runs on the host (scripts/vm-test runs Tests/vm/host/*.sh after the shared VM's tests).
set -u

# --- inside a VM: one boot --------------------------------------------------------------------
if [ "${1:-}" = --guest ]; then
  round=$2; dir=$3; last=$4
  M=/run/vigil-disk; DATA=$M/data
  mkdir -p "$M"
  if [ "$round" = 1 ]; then mkfs.ext4 -q -F /dev/vda || { echo "mkfs failed"; exit 1; }; fi
  mount -t ext4 /dev/vda "$M" || { echo "mount failed"; exit 1; }
  dmesg | grep -E 'EXT4-fs \(vda\)' | sed 's/^\[[ 0-9.]*\] //' > "$dir/mount-$round"
  if [ "$round" != 1 ]; then
    "$VIGIL" log check --data "$DATA" > "$dir/check-$round" 2>&1; echo $? > "$dir/check-$round.rc"
    "$VIGIL" log tail --json -n 1000000 --kind check-in --data "$DATA" |
      sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' > "$dir/logged-$round"
  fi
  printf 'data: %s\nsimulation:\n  advertisers: 200\n' "$DATA" > /run/vigil.yaml
  "$VIGIL" run --config /run/vigil.yaml > "$dir/node-$round.log" 2>&1 &
  node=$!
  # Until it answers: after a cut, the last boot's control.sock may still be on the disk.
  answers() { "$VIGIL" status --json --data "$DATA" 2>/dev/null | grep -q '"live":{'; }
  for _ in $(seq 120); do answers && break; sleep 0.5; done
  answers || { echo "the node did not start"; cat "$dir/node-$round.log"; exit 1; }
  : > "$dir/running-$round"
  if [ "$round" = 1 ]; then "$VIGIL" resident add r1 --interval 4h --data "$DATA" || exit 1; fi
  got=0
  while :; do
    if out=$("$VIGIL" checkin r1 --data "$DATA" 2>&1) && [[ "$out" =~ \(event\ ([0-9]+)\) ]]; then
      echo "${BASH_REMATCH[1]}" >> "$dir/acked"   # a host file: it outlives the VM
      got=$((got + 1))
    fi
    # The last boot stops by itself after an acknowledged check-in; the others wait for the cut.
    [ "$last" = 1 ] && [ "$got" -ge 1 ] && break
  done
  kill -TERM "$node"; wait "$node"; echo $? > "$dir/stop.rc"
  "$VIGIL" log check --data "$DATA" > "$dir/check-final" 2>&1; echo $? > "$dir/check-final.rc"
  "$VIGIL" log tail --json -n 1000000 --kind check-in --data "$DATA" |
    sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' > "$dir/logged-final"
  umount "$M"
  exit 0
fi

# --- on the host --------------------------------------------------------------------------------
. "$(dirname "$0")/../lib/host.bash"
DIR=$(mktemp -d "${TMPDIR:-/tmp}/vigil-power-cut.XXXXXX")
VM_PID=""
trap '[ -z "$VM_PID" ] || kill "$VM_PID" 2>/dev/null; rm -rf "$DIR"' EXIT
IMAGE="$DIR/disk.img"
truncate -s 256M "$IMAGE"
: > "$DIR/acked"
SELF=$(realpath "$0")

# boot ROUND LAST: a VM on the image running this script's guest part, output to DIR/vm-ROUND.
boot() {
  "$RADIO_VM" -n 0 -t 240 -d "$IMAGE" -p "$DIR/cut-$1" -- bash "$SELF" --guest "$1" "$DIR" "$2" \
    > "$DIR/vm-$1" 2>&1 &
  VM_PID=$!
}
vm_output() { sed 's/^/     vm| /' "$DIR/vm-$1"; }
# skipped RC ROUND: radio-vm could not start a VM here (77): the whole test is skipped.
skipped() { [ "$1" = 77 ] || return 0; grep -m1 '^SKIPPED' "$DIR/vm-$2"; exit 77; }
# vm_running: radio-vm still runs (not exited; an exited child not yet waited for is a zombie).
vm_running() { local s; s=$(cat "/proc/$VM_PID/stat" 2>/dev/null) || return 1; s=${s##*) }; [ "${s%% *}" != Z ]; }
# ready_or_gone ROUND TARGET: the node of boot ROUND is up and TARGET check-ins are acknowledged,
# or the VM is gone.
ready_or_gone() { { [ -e "$DIR/running-$1" ] && [ "$(lines "$DIR/acked")" -ge "$2" ]; } || ! vm_running; }

# pull_plug ROUND MIN_NEW_ACKS DELAY_S: once MIN_NEW_ACKS more check-ins are acknowledged, wait
# DELAY_S and pull the plug; then the VM must be gone with radio-vm's power-cut status (75).
pull_plug() {
  local before target rc
  before=$(lines "$DIR/acked"); target=$((before + $2))
  if ! wait_ms 150000 ready_or_gone "$1" "$target"; then
    bad "boot $1: no $2 check-ins acknowledged within 150 s"; vm_output "$1"
    # The node's own last words (a crash's message), before the directory goes.
    echo "     the node's output:"; tail -n 40 "$DIR/node-$1.log" 2>/dev/null | cut -c1-240 | sed 's/^/     | /'
    finish
  fi
  if ! vm_running; then
    wait "$VM_PID"; rc=$?; VM_PID=""
    skipped "$rc" "$1"
    bad "boot $1: the VM ended before the cut (exit $rc)"; vm_output "$1"; finish
  fi
  sleep "$3"
  : > "$DIR/cut-$1"
  wait "$VM_PID"; rc=$?; VM_PID=""
  cp "$DIR/acked" "$DIR/acked-before-cut-$1"
  check "boot $1: plug pulled $3 s after check-in $target (radio-vm exit $rc = 75, power cut); $(lines "$DIR/acked") check-ins acknowledged so far" [ "$rc" = 75 ]
  [ "$rc" = 75 ] || vm_output "$1"
  echo "     the node's last lines before the cut:"; tail -n 2 "$DIR/node-$1.log" | cut -c1-160 | sed 's/^/     | /'
}

# verify ROUND PREVIOUS: what boot ROUND found on the disk boot PREVIOUS left behind.
verify() {
  local rc missing
  echo "     mount: $(grep -oE 'recovery complete|mounted filesystem.*' "$DIR/mount-$1" | tr '\n' ';' | cut -c1-160)"
  rc=$(cat "$DIR/check-$1.rc" 2>/dev/null)
  check "boot $1: vigil log check exits 0 after the cut ($rc: $(tail -n 1 "$DIR/check-$1" 2>/dev/null); $(grep -o '[0-9]* records checked ([0-9.]*)' "$DIR/check-$1"))" [ "$rc" = 0 ]
  [ "$rc" = 0 ] || sed 's/^/     | /' "$DIR/check-$1"
  missing=$(comm -23 <(sort -u "$DIR/acked-before-cut-$2") <(sort -u "$DIR/logged-$1"))
  check "boot $1: all $(lines "$DIR/acked-before-cut-$2") check-ins acknowledged before the cut are in the log (log has $(lines "$DIR/logged-$1"))${missing:+; missing: $(echo $missing)}" [ -z "$missing" ]
}

echo "1. first boot: mkfs, node, check-ins; the plug is pulled ~5 s after the third check-in"
boot 1 0
pull_plug 1 3 5.3

echo "2. second boot: recovery, node again; the plug is pulled ~8 s after two more check-ins"
boot 2 0
pull_plug 2 2 7.9
verify 2 1
check "boot 2: the node started again after the cut" test -e "$DIR/running-2"

echo "3. third boot: recovery, node again, a check-in, a clean stop"
boot 3 1
wait "$VM_PID"; rc=$?; VM_PID=""
skipped "$rc" 3
check "boot 3 finished (radio-vm exit $rc)" [ "$rc" = 0 ]
[ "$rc" = 0 ] || vm_output 3
verify 3 2
new=$(comm -13 <(sort -u "$DIR/acked-before-cut-2") <(sort -u "$DIR/acked") | grep -c . || true)
check "boot 3: the node took a check-in after the second cut ($new)" [ "$new" -ge 1 ]
check "boot 3: SIGTERM stopped it cleanly (exit $(cat "$DIR/stop.rc" 2>/dev/null))" [ "$(cat "$DIR/stop.rc" 2>/dev/null)" = 0 ]
check "boot 3: vigil log check after the clean stop exits 0" [ "$(cat "$DIR/check-final.rc" 2>/dev/null)" = 0 ]
missing=$(comm -23 <(sort -u "$DIR/acked") <(sort -u "$DIR/logged-final"))
check "boot 3: every check-in ever acknowledged ($(lines "$DIR/acked")) is in the final log${missing:+; missing: $(echo $missing)}" [ -z "$missing" ]
finish
