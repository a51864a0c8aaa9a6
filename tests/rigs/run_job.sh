#!/bin/sh
# run_job.sh EXPECT TIMEOUT RALLY_RUN ARGS... — runs one job through rally-run,
# bounded by TIMEOUT seconds, and checks that
#   - rally-run's exit status is EXPECT ("0", "nonzero", or a number),
#   - with GREP=pattern set, the combined output contains pattern,
#   - no process started by the job is left afterwards,
#   - no rally_mock group member "gave up" waiting for the others (unless
#     GAVE_UP_OK=1: a test of that very message).
# Each job gets a fresh rally_mock_sync directory (RALLY_MOCK_SYNC), where
# the members of a rally_mock group meet to die together; it is removed
# afterwards.
# Every process of the job carries RALLY_TEST_TAG in its environment; that is
# how leftovers are found.
# Choose TIMEOUT about ten times what a healthy run of the job takes on a
# loaded 2-core machine (most jobs here: a few seconds), not minutes, so a
# build that hangs (a lost wake-up, a deadlock) fails in seconds and says so.
expect=$1 limit=$2
shift 2
RALLY_TEST_TAG="job-$$-$(date +%s%N)"
export RALLY_TEST_TAG
RALLY_MOCK_SYNC=$(mktemp -d)
export RALLY_MOCK_SYNC
out=$(mktemp)
timeout -k 5 "$limit" "$@" >"$out" 2>&1
rc=$?
cat "$out"
fail=0
case "$expect" in
    nonzero) [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail=1 ;;
    *) [ "$rc" -eq "$expect" ] || fail=1 ;;
esac
[ "$fail" -eq 1 ] && echo "run_job: exit status $rc, expected $expect (124/137: timed out)"
if [ -n "$GREP" ] && ! grep -q -- "$GREP" "$out"; then
    echo "run_job: output lacks '$GREP'"
    fail=1
fi
if [ "${GAVE_UP_OK:-0}" != 1 ] && grep -q "rally mock: .*gave up" "$out"; then
    echo "run_job: a rally_mock group did not meet (see 'gave up' above)"
    fail=1
fi
rm -f "$out"
sleep 0.2
tag=$RALLY_TEST_TAG
unset RALLY_TEST_TAG # the scan's own processes must not carry the tag
left=$(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" | cut -d/ -f3)
if [ -n "$left" ]; then
    echo "run_job: processes left behind: $left"
    ps -o pid,args -p $(echo $left | tr ' ' ',') || true
    kill -9 $left 2>/dev/null
    fail=1
fi
rm -rf "$RALLY_MOCK_SYNC"
exit $fail
