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
. "$(dirname "${BASH_SOURCE[0]}")/checks.bash"
lines() { grep -c . "$1" 2>/dev/null || true; }
