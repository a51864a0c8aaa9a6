#!/bin/sh
# fault_test.sh CASE RALLY_RUN PLAIN MOCK — failures that mock points alone
# do not cover, each bounded in time, none leaving a process behind:
#   kill9       kill -9 two workers (one after the other) mid-run: same digest
#   sigstop     SIGSTOP a worker: heartbeats stop, it is fenced, killed and
#               restarted; same digest
#   diverge     a restarted worker calls a different collective: the job
#               stops with an error naming both calls, no hang
#   exhausted   a rank dies more often than --max-restarts: clear failure
#   busy        survivors compute for 2.5 s between collectives, longer than
#               the tracker's epoch deadline (--startup-timeout-ms 800):
#               heartbeats show they live, so the epoch waits for them
#   stalled     a worker's links carry nothing for 3 s while it lives (stopped
#               for less than the heartbeat timeout): the stalled collectives
#               time out (rally_timeout_ms), a worker reports the link, the
#               tracker re-wires the job, nobody dies, the model is the same
set -u
case_=$1 run=$2 plain=$3 mock=$4
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "fault_test $case_: $*"; cat "$tmp/out" 2>/dev/null | tail -40; exit 1; }

baseline() { # size iters extra...
    "$here/../rigs/run_job.sh" 0 60 "$run" -n 4 "$plain" "$@" >"$tmp/plain" 2>&1 || fail "baseline failed"
    grep -o 'model_digest=[0-9a-f]*' "$tmp/plain"
}

pid_of() { # rank: the newest pid line of that rank
    grep "^\[$1\] pid $1 " "$tmp/out" | tail -n 1 | awk '{print $4}'
}

wait_for() { # pattern seconds
    i=0
    while ! grep -q "$1" "$tmp/out" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -gt $(($2 * 10)) ] && return 1
        sleep 0.1
    done
}

# start_job LAUNCHER_ARGS... -- PROG_ARGS...: the failure-free digest into
# $want, then the same job in the background (its output in $tmp/out, its
# pid in $job) once every rank has started.
start_job() {
    largs=""
    while [ "$1" != "--" ]; do largs="$largs $1"; shift; done
    shift
    want=$(baseline "$@") || fail "the failure-free run failed: $want"
    # shellcheck disable=SC2086 # the launcher arguments split on purpose
    RALLY_TEST_TAG="fault-$$" timeout -k 5 60 "$run" -n 4 $largs "$plain" "$@" >"$tmp/out" 2>&1 &
    job=$!
    wait_for "^\[3\] pid 3 " 30 || fail "rank 3 never started"
}

# finish_job DEATHS: the job succeeded with the failure-free digest and
# exactly DEATHS deaths.
finish_job() {
    wait "$job" || fail "the job failed"
    got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
    [ "$got" = "$want" ] || fail "digest $got, want $want"
    grep -q "summary: deaths=$1 recovered=$1 " "$tmp/out" || fail "want deaths=$1 recovered=$1"
}

case $case_ in
kill9)
    start_job -- 2000 12 100
    sleep 0.4
    kill -9 "$(pid_of 1)"
    wait_for "recovered: epoch" 30 || fail "no recovery after the first kill"
    sleep 0.3
    kill -9 "$(pid_of 3)"
    finish_job 2
    ;;
sigstop)
    start_job --heartbeat-timeout-ms 1500 -- 2000 12 100 rally_heartbeat_ms=200
    sleep 0.4
    stopped=$(pid_of 2)
    kill -STOP "$stopped"
    finish_job 1
    grep -q "heartbeat" "$tmp/out" || fail "the stop was not blamed on missing heartbeats"
    kill -0 "$stopped" 2>/dev/null && fail "the stopped worker $stopped is still there"
    ;;
diverge)
    GREP="diverged after its restart" "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 4 "$mock" 500 3 \
        diverge rally_mock=2,1,2,0 >"$tmp/out" 2>&1 || fail "want a clean failure naming the divergence"
    grep -q "^rally-run: .*diverged" "$tmp/out" || fail "rally-run did not say why"
    grep -q "make the checkpoint the step's last collective" "$tmp/out" ||
        fail "the divergence does not hint at the rule"
    ;;
exhausted)
    GREP="restart" "$here/../rigs/run_job.sh" nonzero 60 "$run" -n 4 --max-restarts 1 "$mock" 500 3 \
        rally_mock=1,1,2,0 rally_mock=1,1,2,1 >"$tmp/out" 2>&1 || fail "want a clean failure"
    grep -q "summary: deaths=2 " "$tmp/out" || fail "want deaths=2"
    ;;
busy)
    start_job --startup-timeout-ms 800 -- 2000 3 2500 rally_heartbeat_ms=200
    sleep 0.5
    kill -9 "$(pid_of 2)"
    finish_job 1
    ;;
stalled)
    # A link that carries nothing while both ends live.  (A true packet drop
    # needs netfilter or traffic-control modules this kind of machine lacks;
    # a worker stopped for less than the heartbeat timeout stalls its links
    # the same way while its heartbeats only pause.)
    start_job --heartbeat-timeout-ms 20000 -- 20000 30 30 rally_timeout_ms=1000
    sleep 0.3
    pid=$(pid_of 1)
    kill -STOP "$pid"
    sleep 3
    kill -CONT "$pid"
    finish_job 0
    grep -q "made no progress" "$tmp/out" || fail "no worker reported the stalled link"
    grep -q "recovered: epoch" "$tmp/out" || fail "the job was not re-wired"
    ;;
*)
    fail "unknown case"
    ;;
esac
# nothing of the job may be left
sleep 0.3
left=$(grep -l "RALLY_TEST_TAG=fault-$$" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
[ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "processes left behind: $left"; }
grep "^rally-run:" "$tmp/out"
echo "fault_test $case_: passed"
