#!/bin/bash
# racks_test.sh CASE BUILD_DIR — racks as failure domains on the multi-host
# rig (tests/rigs/netns_rig.sh): 4 hosts of 2 ranks, hosts 1-2 labelled rack a
# and hosts 3-4 rack b in a --hostfile (`ADDR:2@a`), a records job
# (tests/progs/records.c) with rally_local_replica=1, and every rank of
# rack b (ranks 4-7) killed at once by a rally_mock group.
#   rack  the labels make the placement ring spread over racks (docs/
#         recovery.md, "Failure domains"): each model's one copy sits in
#         the other rack, the four ranks restart on their hosts and the job
#         ends with the failure-free digest
#   host  the same job with rally_spread=host: the copies go to other hosts
#         but partly within rack b, the loss takes some last copies, and the
#         job fails with the sentence naming them (the negative control:
#         the rack level is what saved the job above); rally-run said so at
#         the start
# Needs root (network namespaces): without it the test reports itself
# skipped (exit 77) with the reason.  Bounded by a watchdog and timeouts;
# the trap removes every namespace, process and file.
set -u
case_=$1
build=$(cd "$2" && pwd) || { echo "racks_test: no build directory $2"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run rec=$build/tests/records_mock
. "$here/../rigs/netns_rig.sh"

tmp=$(mktemp -d)
fail() {
    echo "racks_test $case_: $*"
    [ -f "$tmp/out" ] && tail -40 "$tmp/out"
    exit 1
}
cleanup() {
    [ -n "${RIG_JOB:-}" ] && kill -9 "$RIG_JOB" 2>/dev/null
    rig_down
    rm -rf "$tmp"
}
rig_watchdog 200
rig_up 4
rc=$?
if [ $rc -eq 77 ]; then
    echo "racks_test $case_: skipped: $RIG_SKIP"
    rig_down
    rm -rf "$tmp"
    exit 77
fi
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 143' TERM INT
[ $rc -eq 0 ] || fail "the namespaces could not be set up (above)"

for i in 1 2 3 4; do
    rack=a
    [ "$i" -gt 2 ] && rack=b
    echo "${RIG_ADDR[$i]}:2@$rack"
done >"$tmp/hosts"
export RIG_HOSTFILE=$tmp/hosts RIG_WORLD=8
mkdir -p "$tmp/sync"
chmod 777 "$tmp/sync"
export RALLY_MOCK_SYNC=$tmp/sync

# job OUT [rally_key=value...]: the records job, bounded; its status
job() {
    local out=$1
    shift
    rig_job "$run" "$out" 120 -- "$rec" 1000 12 rally_local_replica=1 "$@"
    wait "$RIG_JOB"
    local st=$?
    RIG_JOB=""
    return $st
}
rdig() { sed -n 's/.*records: result digest=\([0-9a-f]*\) ids=1000$/\1/p' "$1"; }
kills=()
for r in 4 5 6 7; do kills+=("rally_mock=$r,5,0,0,op,rackb"); done

job "$tmp/plain" || { cp "$tmp/plain" "$tmp/out"; fail "the job without failures failed"; }
[ -n "$(rdig "$tmp/plain")" ] || { cp "$tmp/plain" "$tmp/out"; fail "no digest"; }
case $case_ in
rack)
    job "$tmp/a" "${kills[@]}" || { cp "$tmp/a" "$tmp/out"; fail "the job did not recover"; }
    cp "$tmp/a" "$tmp/out"
    for r in 4 5 6 7; do
        grep -q "^rally-run: rank $r on host .* died (killed by signal 9); restarting it" "$tmp/a" ||
            fail "rank $r did not die and restart"
    done
    ! grep -q "would lose" "$tmp/a" || fail "rally-run warned of a loss the racks cover"
    [ "$(rdig "$tmp/a")" = "$(rdig "$tmp/plain")" ] ||
        fail "digest $(rdig "$tmp/a"), without the loss $(rdig "$tmp/plain")"
    ;;
host)
    RALLY_SPREAD=host job "$tmp/a" "${kills[@]}" && { cp "$tmp/a" "$tmp/out"; fail "the job ended well"; }
    cp "$tmp/a" "$tmp/out"
    grep -q "cannot recover: the local models of ranks [0-9, ]* are lost" "$tmp/a" ||
        fail "no sentence naming the lost models"
    grep -q "^rally-run: losing rack b (4 of 8 ranks) would lose the local models" "$tmp/a" ||
        fail "rally-run did not say at the start that losing rack b loses copies"
    ;;
*)
    fail "no case $case_"
    ;;
esac
exit 0
