# Checks and waits shared by the VM's tests (common.bash) and the host's (host.bash). Sourced,
# never run.
FAILED=0
CHECKS=0

ok() { CHECKS=$((CHECKS + 1)); echo "  ok   $*"; }
bad() { CHECKS=$((CHECKS + 1)); FAILED=$((FAILED + 1)); echo "  FAIL $*"; }
# check "description" COMMAND...: ok if COMMAND succeeds.
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
# Ends the test: exit 1 if any check failed.
finish() {
  echo "$CHECKS checks, $FAILED failed"
  [ "$FAILED" -eq 0 ]
  exit $?
}

# Time since boot (CLOCK_BOOTTIME, centiseconds), in nanoseconds: systemd's *Monotonic
# timestamps and the kernel's event times count from the same start when nothing suspends.
uptime_ns() { local u; read -r u _ < /proc/uptime; echo $(( 10#${u/./} * 10000000 )); }
now_ns() { local t=${EPOCHREALTIME/./}; echo $((10#$t * 1000)); }   # realtime, µs precision

# wait_ms MILLISECONDS COMMAND...: retries COMMAND every 50 ms until it succeeds or time is up.
wait_ms() {
  local deadline=$(( $(now_ns) + $1 * 1000000 )); shift
  while :; do
    "$@" && return 0
    [ "$(now_ns)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
