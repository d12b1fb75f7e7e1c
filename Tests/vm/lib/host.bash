# Shared helpers for Tests/vm/host/*.sh: tests that run on the host and boot VMs of their own
# with scripts/radio-vm. Sourced, never run.
#
# Environment (set by scripts/vm-test):
#   VIGIL       absolute path of the vigil binary under test (exported: radio-vm passes VIGIL on)
#   VIGIL_REPO  the repository root
#   RADIO_VM    scripts/radio-vm
set -u

: "${VIGIL:?VIGIL must name the vigil binary}"
: "${VIGIL_REPO:?VIGIL_REPO must name the repository root}"
RADIO_VM=${RADIO_VM:-$VIGIL_REPO/scripts/radio-vm}
export VIGIL VIGIL_REPO
FAILED=0
CHECKS=0

ok() { CHECKS=$((CHECKS + 1)); echo "  ok   $*"; }
bad() { CHECKS=$((CHECKS + 1)); FAILED=$((FAILED + 1)); echo "  FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() {
  echo "$CHECKS checks, $FAILED failed"
  [ "$FAILED" -eq 0 ]
  exit $?
}

now_ns() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }
# wait_ms MILLISECONDS COMMAND...: retries COMMAND every 100 ms until it succeeds or time is up.
wait_ms() {
  local deadline=$(( $(now_ns) + $1 * 1000000 )); shift
  while :; do
    "$@" && return 0
    [ "$(now_ns)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
lines() { grep -c . "$1" 2>/dev/null || true; }
