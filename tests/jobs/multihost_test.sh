#!/bin/bash
# multihost_test.sh CASE BUILD_DIR — a 4-host k-means job (rally-kmeans)
# across network namespaces that each run sshd (tests/rigs/netns_rig.sh), started
# from inside host 1, rank r on host r+1.
#   plain    the job ends with the digest of the same job on one host, every
#            worker ran in its own host's namespace, nothing is left behind
#   kill9    kill -9 of host 3's worker at iteration 3: rank 2 restarts on
#            host 3 and says it resumed; the same digest
#   linkcut  host 4's cable goes down for good at iteration 3, with both ends
#            alive; rally_link_timeout_ms=2000, a 3 s heartbeat timeout and a
#            20 s re-registration bound: the job must end inside its bound
#            (never hang), with the digest (re-wired) or a clear error
#   flap     host 4's cable goes down at iteration 3 and comes back once the
#            launcher has lost rank 3's ssh session (its log line, not a
#            sleep): rank 3 restarts on host 4 and the job re-wires around
#            it, the same digest
#   lost     elastic (--min-workers 3): host 4's cable goes down for good at
#            iteration 3 and its rank's restart cannot reach it over ssh; the
#            job gives rank 3 up and ends well with 3 workers, well inside
#            its bound
#   comeback elastic (--min-workers 3 --max-workers 4 --rejoin-ms 1000): host
#            4 is lost as in lost; rally-run tries it again while it is down
#            (said once), the cable comes back, the next try starts a worker
#            there, and the job takes it in and ends with 4 workers
#   hostfile -n 3 on a --hostfile of hosts 1-3, --max-workers 4: SIGUSR2 asks
#            for a fourth worker, which waits (no slot free) until host 4 is
#            added to the file; the next try (--rejoin-ms) starts it there and
#            the job takes it in
#   tbf      every cable shaped by tc tbf (2 Mbit/s): the same digest, and the
#            shaper's counters show the job's bytes went through it
#   ipv6     the cables carry only fd00:5253::/64 (IPv4 addresses removed):
#            the tracker, ssh and every peer link on IPv6, the same digest
#   hier     2 hosts x 2 ranks (RIG_SLOTS=2): every collective against the
#            serial model bit for bit (coll_matrix), the model told that
#            ranks 0-1 and 2-3 share hosts: the address book's hosts give
#            the hierarchy's order (chains over shared memory, the leaders'
#            ring across the cables) with no setting
#   hier_kill9  2 hosts x 2 ranks, a k-means job whose sums take the
#            hierarchy (rally_ring_threshold_bytes=256): kill -9 of host 2's
#            leader (rank 2) at iteration 3: it restarts on host 2, the same
#            digest
#   control  negative control: every cable down before the job starts: the
#            job must fail (so the jobs above really cross the cables)
#   private  a --snapshot-dir private to each host (--snapshot-local: a
#            tmpfs of each host's own, RIG_PRIVATE), the second tier a
#            directory all hosts share: a job with local models snapshots,
#            each host copies its own files there (host 3's copy equals its
#            file, which host 1 cannot see), no host holds a manifest, each
#            prunes its older files; the whole job killed, host 3's
#            directory deleted, --resume latest takes the second tier and
#            ends with the failure-free digest; then SIGTERM to rally-run
#            stops a job once its snapshot is committed in the second tier
# Whole hosts lost (issue 46; docs/launch.md, "Losing a whole host"): 3
# hosts x 4 ranks (RIG_SLOTS=4, a job of 12), the copies placed by failure
# domain (docs/recovery.md), a records job (tests/progs/records.c, local
# models as records, the same digest at any N) unless said otherwise; each
# ends with the digest of the same job on one host without failures.
#   host_kill9        every worker of host 2 killed with kill -9 at once
#            (their pids found inside its namespace) while rank 0 waits at
#            a gate: all four restart on host 2
#   host_kill9_piece  the same for a result kept in part (tests/progs/
#            recover.c, a 1 MiB allreduce on the ring, rally_hier=off): host
#            2 killed right after that result is cached, before the
#            checkpoint (rank 0 lags there)
#   host_cut_inplace  a --hostfile of 4 hosts with 4 slots each (-n 12 fills
#            hosts 1-3): host 2's cable cut for good; each of its ranks,
#            whose restart cannot reach host 2, is restarted on host 4 (a
#            slot free) with its rank number: the job recovers in place
#   host_cut_shrink   --min-workers 8 and no slot free: host 2's cable cut
#            for good; its four ranks are given up and the job ends with 8
#   host_comeback     elastic (--min-workers 8 --max-workers 12 --rejoin-ms
#            1000): host 2 lost as in host_cut_shrink, tried while its cable
#            is down, then mended: one try starts a worker on each of its
#            four slots, the job (held between two checkpoints until all
#            four wait to join) takes them in at one checkpoint and ends
#            with 12 workers
# Needs root (network namespaces): without it the test reports itself skipped
# (exit 77) with the reason.  Bounded: each job by timeout, the whole test by
# a watchdog, and the trap removes every namespace, process and file.
#
# The job starts in one place, rig_job (tests/rigs/netns_rig.sh): `rally-run
# --launcher ssh --hosts ...`, which restarts a rank that died on the host it
# ran on.
set -u
case_=$1
build=$(cd "$2" && pwd) || { echo "multihost_test: no build directory $2"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run km=$build/rally-kmeans
N=4 H=4 # ranks, hosts
case $case_ in
hier*) H=2 RIG_SLOTS=2 ;;
host_cut_inplace) H=4 N=12 RIG_SLOTS=4 RIG_WORLD=12 ;; # host 4: the slots free
host_*) H=3 N=12 RIG_SLOTS=4 ;;
esac
. "$here/../rigs/netns_rig.sh"

tmp=$(mktemp -d)
JOB=""
fail() {
    echo "multihost_test $case_: $*"
    [ -f "$tmp/out" ] && tail -40 "$tmp/out"
    exit 1
}
stop_job() {
    [ -n "$JOB" ] && kill -TERM "$JOB" 2>/dev/null && sleep 0.5 && kill -9 "$JOB" 2>/dev/null
    JOB=""
}
cleanup() {
    stop_job
    rig_down
    rm -rf "$tmp"
}

v6=0
[ "$case_" = ipv6 ] && v6=1
if [ "$case_" = private ]; then
    P=$tmp/local # each host's own disk: a mount point here, a tmpfs on each host
    mkdir -p "$P" "$tmp/pfs"
    RIG_PRIVATE=$P
fi
bound=240
case $case_ in host_*) bound=280 ;; esac
rig_watchdog $bound
rig_up $H $v6
rc=$?
if [ $rc -eq 77 ]; then
    echo "multihost_test $case_: skipped: $RIG_SKIP"
    rig_down
    rm -rf "$tmp"
    exit 77
fi
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 143' TERM INT
[ $rc -eq 0 ] || fail "the namespaces could not be set up (above)"

# --- the job -------------------------------------------------------------------

# start_job OUT LIMIT [rally-run options] -- PROG ARGS: the job, rank r on
# host r+1, in the background ($JOB); rig_job is the one place that starts it
start_job() {
    rig_job "$run" "$@"
    JOB=$RIG_JOB
}

# wait_job LIMIT: the job's exit status (it is bounded by its own timeout)
wait_job() {
    wait "$JOB"
    local rc=$?
    JOB=""
    return $rc
}

# no_leftovers: once a job ended, its hosts run nothing but their sshd
no_leftovers() {
    local i p left n=0
    while :; do
        left=""
        for i in $(seq 1 $H); do
            for p in $(ip netns pids "${RIG_NS[$i]}"); do
                [[ " ${RIG_SSHD_PIDS[*]} " == *" $p "* ]] || left="$left $p"
            done
        done
        [ -z "$left" ] && return 0
        n=$((n + 1))
        if [ $n -gt 50 ]; then
            ps -o pid,args -p "$(echo $left | tr ' ' ',')"
            fail "processes left on the hosts:$left"
        fi
        sleep 0.1
    done
}

wait_line() { # file pattern what: until the pattern shows in file (or the job ends)
    local i=0
    until grep -q "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt 900 ] && fail "$3 never came"
        kill -0 "$JOB" 2>/dev/null || { grep -q "$2" "$1" && return 0; fail "the job ended before $3"; }
        sleep 0.1
    done
}

digest() { grep -o 'model_digest=[0-9a-f]*' "$1" | head -1; }

# 20,000 rows x 8 features around 6 centres (kmeans_test.sh's job)
data=$tmp/d.csv
"$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 --format csv \
    -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
KM=(--data "$data" --data-opt csv_label=0 -k 6)
FAST=(--heartbeat-timeout-ms 3000 --startup-timeout-ms 20000)
LINK=(rally_link_timeout_ms=2000 rally_connect_timeout_ms=20000)

# the same job on one host: the digest every case must give (the host_
# cases' jobs are their own: below)
case $case_ in
host_*) ;;
*)
    "$here/../rigs/run_job.sh" 0 120 "$run" -n $N "$km" "${KM[@]}" >"$tmp/one" 2>&1 ||
        { cat "$tmp/one"; fail "the one-host job failed"; }
    want=$(digest "$tmp/one")
    [ -n "$want" ] || fail "the one-host job printed no digest"
    echo "multihost_test $case_: one host: $want"
    ;;
esac

same_digest() { # out: the failure-free digest
    local got
    got=$(digest "$1")
    [ "$got" = "$want" ] || fail "digest '$got', want $want"
}

# --- whole hosts (the host_ cases) ---------------------------------------------

rec=$build/tests/records_mock
rdigest() { grep -o 'records: result digest=[0-9a-f]* ids=[0-9]*' "$1" | head -1; }

# one_host OUT DIGEST PROG ARGS...: the job on one host without failures,
# its digest into want
one_host() {
    local out=$1 how=$2
    shift 2
    "$here/../rigs/run_job.sh" 0 180 "$run" -n $N "$@" >"$out" 2>&1 ||
        { cat "$out"; fail "the one-host job failed"; }
    want=$($how "$out")
    [ -n "$want" ] || fail "the one-host job printed no digest"
    echo "multihost_test $case_: one host: $want"
}

host_digest() { # out: the failure-free digest of the host_ case's job
    local got
    got=$($dig "$1")
    [ "$got" = "$want" ] || fail "digest '$got', want $want"
}

# workers_on I PROG: the pids of PROG's processes running on host I
workers_on() {
    local p
    for p in $(ip netns pids "${RIG_NS[$1]}"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p"
    done
    return 0
}

# wait_count FILE PATTERN K WHAT: until K lines of file match (or the job ends)
wait_count() {
    local i=0
    until [ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ]; do
        i=$((i + 1))
        [ $i -gt 900 ] && fail "$4 never came ($(grep -c "$2" "$1") of $3)"
        kill -0 "$JOB" 2>/dev/null || fail "the job ended before $4"
        sleep 0.1
    done
}

# wait_workers I PROG K: until K of PROG's processes run on host I
wait_workers() {
    local i=0
    until [ "$(workers_on "$1" "$2" | wc -l)" -ge "$3" ]; do
        i=$((i + 1))
        [ $i -gt 600 ] && fail "$3 workers never ran on host $1 ($(workers_on "$1" "$2" | wc -l))"
        kill -0 "$JOB" 2>/dev/null || fail "the job ended before $3 workers ran on host $1"
        sleep 0.1
    done
}

RECS=(1000 40) # ids, iterations
dig=rdigest

case $case_ in
plain)
    start_job "$tmp/out" 120 --max-restarts 0 -- "$km" "${KM[@]}" --pause-ms 300
    wait_line "$tmp/out" '^\[0\] iteration 1 ' "iteration 1"
    for r in $(seq 0 $((N - 1))); do
        p=$(sed -n "s/^\[$r\] shard $r fingerprint .* pid \([0-9]*\)\$/\1/p" "$tmp/out" | tail -1)
        [ -n "$p" ] || fail "rank $r printed no pid"
        ns=$(ip netns identify "$p" 2>/dev/null)
        [ "$ns" = "${RIG_NS[$((r + 1))]}" ] || fail "rank $r (pid $p) runs in '$ns', not on host $((r + 1))"
    done
    wait_job || fail "the job failed"
    cat "$tmp/out"
    same_digest "$tmp/out"
    no_leftovers
    ;;
kill9 | hier_kill9)
    # rank 2: on host 3, or (hier_kill9) host 2's leader inside sums that
    # take the hierarchy (55 doubles, above a 256-byte ring threshold)
    at=3 more=()
    [ "$case_" = hier_kill9 ] && at=2 more=(rally_ring_threshold_bytes=256)
    start_job "$tmp/out" 150 "${FAST[@]}" --max-restarts 2 -- "$km" "${KM[@]}" --pause-ms 100 \
        "${LINK[@]}" "${more[@]}"
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3"
    victim=$(sed -n 's/^\[2\] shard 2 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out" | tail -1)
    [ "$(ip netns identify "$victim" 2>/dev/null)" = "${RIG_NS[$at]}" ] || fail "rank 2 is not on host $at"
    kill -9 "$victim" || fail "no worker $victim to kill"
    echo "multihost_test: killed rank 2 (pid $victim) on host $at"
    wait_job || fail "the job failed after kill -9"
    cat "$tmp/out"
    same_digest "$tmp/out"
    grep -q '^\[2\] rank 2 restarted: resuming after iteration' "$tmp/out" || fail "rank 2 did not say it resumed"
    again=$(sed -n 's/^\[2\] shard 2 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out" | tail -1)
    [ "$again" != "$victim" ] || fail "rank 2 never restarted"
    grep -q "^rally-run: rank 2 on host ${RIG_IP[$at]} died .*restarting it on ${RIG_IP[$at]} " "$tmp/out" ||
        fail "rank 2 did not come back on host $at"
    no_leftovers
    ;;
linkcut | flap)
    start_job "$tmp/out" 150 "${FAST[@]}" --max-restarts 3 -- "$km" "${KM[@]}" --pause-ms 100 "${LINK[@]}"
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3"
    rig_link 4 down || fail "cannot cut host 4's cable"
    cut=$(date +%s)
    echo "multihost_test: cut host 4's cable at $(date +%T)"
    if [ "$case_" = flap ]; then
        # mended once rally-run knows rank 3's ssh session lost ("died"):
        # before that, the cut worker's own exit
        # (status 1: it lost the tracker) could still reach the launcher,
        # which takes an exit of its own for the job's failure
        wait_line "$tmp/out" 'rank 3 .*died' "the loss of rank 3"
        rig_link 4 up || fail "cannot mend host 4's cable"
        echo "multihost_test: mended it at $(date +%T)"
    fi
    wait_job
    rc=$?
    took=$(($(date +%s) - cut))
    cat "$tmp/out"
    echo "multihost_test $case_: the job ended with status $rc, $took s after the cut"
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "the job hung (killed at its bound)"
    # the timeouts set above bound it (the kernel's defaults take ~15 min)
    [ "$took" -lt 90 ] || fail "the cut took $took s to handle"
    if [ $rc -eq 0 ]; then
        same_digest "$tmp/out"
        grep -q 'recovered' "$tmp/out" || fail "the job ended well but nothing recovered"
        echo "multihost_test $case_: re-wired"
    else
        [ "$case_" = flap ] && fail "the cable came back, yet the job failed"
        # a clear error: it names the cut rank or host, and what went wrong
        clear=$(grep -E 'rank 3|rank\(s\) 3|198\.18\.0\.4' "$tmp/out" |
            grep -Ei 'timed out|time.?out|cannot be reached|unreachable|no route|lost|did not rejoin')
        [ -n "$clear" ] || fail "the job failed without a clear error naming rank 3 or host 4"
        echo "$clear" | tail -3
        echo "multihost_test $case_: failed with a clear error"
    fi
    rig_link 4 up
    no_leftovers
    ;;
lost)
    start_job "$tmp/out" 150 "${FAST[@]}" --max-restarts 2 --min-workers 3 -- "$km" "${KM[@]}" \
        --pause-ms 100 "${LINK[@]}" --iters 40 --fixed
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3"
    rig_link 4 down || fail "cannot cut host 4's cable"
    cut=$(date +%s)
    echo "multihost_test: cut host 4's cable for good at $(date +%T)"
    wait_job
    rc=$?
    took=$(($(date +%s) - cut))
    cat "$tmp/out"
    echo "multihost_test $case_: the job ended with status $rc, $took s after the cut"
    [ $rc -eq 0 ] || fail "the job failed (status $rc)"
    [ "$took" -lt 90 ] || fail "the loss took $took s to handle"
    grep -q '^rally-run: host .* (rank 3): cannot be reached.*: giving it up$' "$tmp/out" ||
        fail "rally-run did not give rank 3 up for its host"
    grep -q '^rally-run: rank 3 lost for good: going on with 3 workers from version [0-9]*$' "$tmp/out" ||
        fail "no line for the change"
    grep -q '^rally-run: summary: .* lost-for-good=3 workers=3$' "$tmp/out" || fail "summary"
    grep -q 'model_digest=' "$tmp/out" || fail "no result"
    rig_link 4 up
    no_leftovers
    ;;
comeback)
    start_job "$tmp/out" 200 "${FAST[@]}" --max-restarts 2 --min-workers 3 --max-workers 4 \
        --rejoin-ms 1000 -- "$km" "${KM[@]}" --pause-ms 100 "${LINK[@]}" --iters 500 --fixed
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3"
    rig_link 4 down || fail "cannot cut host 4's cable"
    echo "multihost_test: cut host 4's cable at $(date +%T)"
    wait_line "$tmp/out" '^rally-run: rank 3 lost for good: going on with 3 workers from version' \
        "the change to 3 workers"
    # a try on host 4 while it is down, then the cable back: the next try
    # reaches it (the test waits for the miss, so the two cannot race)
    wait_line "$tmp/out" \
        'rank 4 was not started; trying a host with a slot free again every 1000 ms$' \
        "a try while host 4 is down"
    rig_link 4 up || fail "cannot mend host 4's cable"
    echo "multihost_test: mended it at $(date +%T)"
    wait_line "$tmp/out" '^rally-run: taking in 1 worker: going on with 4 workers from version' \
        "the taking in"
    wait_line "$tmp/out" '^\[4\] shard 3 fingerprint ' "the new worker's shard (as rank 3)"
    p=$(sed -n 's/^\[4\] shard 3 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out" | tail -1)
    ns=$(ip netns identify "$p" 2>/dev/null)
    [ "$ns" = "${RIG_NS[4]}" ] || fail "the new worker (pid $p) runs in '$ns', not on host 4"
    # with every place held again rally-run has nothing to try: it waits in
    # poll (a deadline left in the past would spin it at a full core)
    launcher=$(pgrep -o -P "$JOB" -x rally-run)
    t1=$(awk '{ print $14 + $15 }' "/proc/$launcher/stat")
    sleep 3
    t2=$(awk '{ print $14 + $15 }' "/proc/$launcher/stat")
    tck=$(getconf CLK_TCK)
    [ $((t2 - t1)) -lt $((tck / 2)) ] ||
        fail "rally-run used $((t2 - t1)) ticks of CPU in 3 s with nothing to do"
    wait_job || fail "the job failed"
    cat "$tmp/out"
    [ "$(grep -c 'rank 4 was not started' "$tmp/out")" = 1 ] || fail "the misses were said more than once"
    grep -q '^rally-run: summary: .* lost-for-good=3 workers=4$' "$tmp/out" || fail "summary"
    grep -q 'model_digest=' "$tmp/out" || fail "no result"
    no_leftovers
    ;;
hostfile)
    printf '%s\n' "${RIG_ADDR[1]}" "${RIG_ADDR[2]}" "${RIG_ADDR[3]}" >"$tmp/hosts"
    RIG_HOSTFILE=$tmp/hosts RIG_WORLD=3 start_job "$tmp/out" 150 --max-workers 4 \
        --rejoin-ms 500 -- "$km" "${KM[@]}" --pause-ms 100 --iters 200 --fixed
    wait_line "$tmp/out" '^\[0\] iteration 3 ' "iteration 3"
    launcher=$(pgrep -o -P "$JOB" -x rally-run)
    [ -n "$launcher" ] || fail "no rally-run under $JOB"
    kill -USR2 "$launcher" # three hosts, three slots: none free yet
    wait_line "$tmp/out" '^rally-run: SIGUSR2: the job is to have 4 workers' "the SIGUSR2 line"
    sleep 1.2 # two tries of --rejoin-ms 500 find no slot, and start nothing
    grep -q 'started rank 3' "$tmp/out" && fail "a worker started with no slot free"
    echo "${RIG_ADDR[4]} slots=1" >>"$tmp/hosts"
    wait_line "$tmp/out" "^rally-run: started rank 3 on host ${RIG_ADDR[4]} (a slot free)" \
        "the start on the host added"
    wait_line "$tmp/out" '^rally-run: taking in 1 worker: going on with 4 workers from version' \
        "the taking in"
    wait_line "$tmp/out" '^\[3\] shard 3 fingerprint ' "the new worker's shard"
    p=$(sed -n 's/^\[3\] shard 3 fingerprint .* pid \([0-9]*\)$/\1/p' "$tmp/out" | tail -1)
    [ "$(ip netns identify "$p" 2>/dev/null)" = "${RIG_NS[4]}" ] ||
        fail "the new worker (pid $p) is not on host 4"
    wait_job || fail "the job failed"
    cat "$tmp/out"
    grep -q '^rally-run: summary: .* workers=4$' "$tmp/out" || fail "summary"
    no_leftovers
    ;;
tbf)
    rig_tbf 2mbit || fail "tc tbf failed"
    start_job "$tmp/out" 150 --max-restarts 0 -- "$km" "${KM[@]}"
    wait_job || fail "the job failed on shaped links"
    cat "$tmp/out"
    same_digest "$tmp/out"
    for i in $(seq 1 $H); do
        s=$(tc -s -n "${RIG_NS[$i]}" qdisc show dev "$RIG_IF" | grep -A1 'qdisc tbf' |
            sed -n 's/.*Sent \([0-9]*\) bytes.*overlimits \([0-9]*\).*/\1 \2/p')
        echo "host $i: tbf sent/overlimits: $s"
        [ "${s%% *}" -gt 0 ] 2>/dev/null || fail "host $i's shaper saw no bytes"
    done
    no_leftovers
    ;;
hier)
    mat=$build/tests/coll_matrix
    start_job "$tmp/out" 150 --max-restarts 0 -- "$mat" rally_ring_threshold_bytes=4096 \
        rally_chunk_bytes=1024 model_host_group=2
    wait_job || fail "the matrix failed across 2 hosts x 2 ranks (the hierarchy's order?)"
    cat "$tmp/out"
    [ "$(grep -c '^\[[0-3]\] rank [0-3] of 4: [0-9]* checks passed$' "$tmp/out")" = 4 ] ||
        fail "not every rank passed its checks"
    no_leftovers
    ;;
ipv6)
    rig_v6_only || fail "cannot remove the IPv4 addresses"
    start_job "$tmp/out" 120 --max-restarts 0 -- "$km" "${KM[@]}"
    wait_job || fail "the job failed over IPv6"
    cat "$tmp/out"
    same_digest "$tmp/out"
    no_leftovers
    ;;
private)
    rec=$build/tests/recover
    RA=(2000 24 local)
    "$here/../rigs/run_job.sh" 0 120 "$run" -n $N "$rec" "${RA[@]}" >"$tmp/one" 2>&1 ||
        { cat "$tmp/one"; fail "the one-host job with local models failed"; }
    want=$(digest "$tmp/one")
    [ -n "$want" ] || fail "the one-host job printed no digest"
    echo "multihost_test private: one host, local models: $want"
    T=$tmp/pfs
    SNAP=(--snapshot-dir "$P" --snapshot-local --snapshot-copy "$T" --job priv --snapshot-every 3)
    start_job "$tmp/out" 150 "${SNAP[@]}" --max-restarts 0 -- "$rec" "${RA[@]}" 250
    wait_line "$tmp/out" "snapshot: copied to $T/priv/snap-00000006 (verified there" \
        "the copy of version 6"
    # the whole job killed: rally-run (the child of its timeout) and every worker
    workers=$(sed -n 's/^\[[0-9]\] pid [0-9] \([0-9]*\)$/\1/p' "$tmp/out")
    [ "$(echo $workers | wc -w)" = $N ] || fail "want $N worker pids, got '$workers'"
    kill -9 $(pgrep -P "$JOB") $workers 2>/dev/null
    wait_job
    grep -q "result:" "$tmp/out" && fail "the job finished before it was killed"
    grep -v "iteration\|prepare" "$tmp/out" | grep "snapshot\|rally-run"
    no_leftovers
    snap=$("$build/rally-snapshot" ls "$T/priv" | sed -n 's/^  \* \(snap-[0-9]*\) .*/\1/p')
    [ -n "$snap" ] || { "$build/rally-snapshot" ls "$T/priv"; fail "no complete copy in $T/priv"; }
    "$build/rally-snapshot" verify "$T/priv/$snap" >/dev/null || fail "$T/priv/$snap does not verify"
    echo "multihost_test private: the newest copy is $snap"
    f=$snap/local-0002.bin
    # host 3's own file was copied from host 3: the copy is its bytes, and
    # neither host 1 (rank 0) nor this namespace can see that file
    rig_ssh 3 cat "$P/priv/$f" | cmp -s - "$T/priv/$f" ||
        fail "the copy of $f is not host 3's file"
    rig_ssh 1 test -e "$P/priv/$f" && fail "host 1 sees host 3's $f: the directories are not private"
    [ -e "$P/priv/$f" ] && fail "$P/priv/$f is seen outside the hosts"
    for i in $(seq 1 $H); do
        m=$(rig_ssh "$i" sh -c "'ls $P/priv/*/MANIFEST.json 2>/dev/null | wc -l'")
        [ "$m" = 0 ] || fail "host $i holds $m manifests in its private directory"
        old=$(rig_ssh "$i" ls "$P/priv" | awk -v s="$snap" '/^snap-/ && $0 < s' | wc -l)
        [ "$old" = 0 ] || fail "host $i kept $old snapshot directories older than $snap"
    done
    # host 3 lost with its disk: the job resumes from the second tier
    rig_ssh 3 rm -rf "$P/priv"
    start_job "$tmp/res" 150 "${SNAP[@]}" --max-restarts 0 --resume latest -- "$rec" "${RA[@]}"
    wait_job || { cat "$tmp/res"; fail "the resumed job failed"; }
    grep -v "iteration\|prepare\|pid" "$tmp/res"
    grep -q "^rally-run: resuming from $T/priv/$snap (the second tier, --snapshot-copy)" "$tmp/res" ||
        fail "rally-run did not resume from $T/priv/$snap, the second tier"
    same_digest "$tmp/res"
    no_leftovers
    # preempted (SIGTERM to rally-run): the snapshot asked for is committed
    # in the second tier, where rally-run looks for it with --snapshot-local
    start_job "$tmp/pre" 150 --snapshot-dir "$P" --snapshot-local --snapshot-copy "$T" --job pre \
        --snapshot-every 100 --grace-ms 20000 --max-restarts 0 -- "$rec" "${RA[@]}" 250
    wait_line "$tmp/pre" "^\[3\] pid 3 " "rank 3's start"
    kill -TERM "$(pgrep -P "$JOB")"
    wait_job
    st=$?
    grep -v "prepare\|pid" "$tmp/pre"
    [ "$st" -eq 5 ] || fail "exit status $st after the preemption, want 5"
    grep -q "preempted by signal 15 (Terminated) after $T/pre/snap-[0-9]* was committed" "$tmp/pre" ||
        fail "the verdict does not name the snapshot in the second tier"
    no_leftovers
    ;;
host_kill9 | host_kill9_piece)
    if [ "$case_" = host_kill9 ]; then
        prog=records_mock
        one_host "$tmp/one" rdigest "$rec" "${RECS[@]}"
        start_job "$tmp/out" 200 "${FAST[@]}" --max-restarts 2 -- "$rec" "${RECS[@]}" \
            "gate=3,$tmp/go"
        wait_line "$tmp/out" '^\[0\] records: at the gate$' "the gate"
    else
        # 131072 doubles: the sum (seq 4 of 12 ranks' iteration) is kept in
        # part; rank 0 lags before the checkpoint (seq 6) of version 3
        prog=recover dig=digest
        PA=(131072 6 rally_hier=off rally_hd_threshold_bytes=0)
        one_host "$tmp/one" digest "$build/tests/recover" "${PA[@]}"
        start_job "$tmp/out" 200 "${FAST[@]}" --max-restarts 2 -- "$build/tests/recover" \
            "${PA[@]}" lag=0,3,6,4000
        wait_line "$tmp/out" '^\[0\] rank 0 lags 4000 ms before seq 6$' "rank 0's lag"
    fi
    victims=$(workers_on 2 $prog)
    [ "$(echo $victims | wc -w)" = 4 ] || fail "want 4 workers on host 2, found '$victims'"
    kill -9 $victims || fail "cannot kill $victims"
    echo "multihost_test: killed every worker of host 2 at once:" $victims
    touch "$tmp/go"
    wait_job || fail "the job failed after host 2's workers were killed"
    cat "$tmp/out"
    host_digest "$tmp/out"
    for r in 4 5 6 7; do
        grep -q "^rally-run: rank $r on host ${RIG_IP[2]} died (killed by signal 9); restarting it on ${RIG_IP[2]} " "$tmp/out" ||
            fail "rank $r did not restart on host 2"
    done
    no_leftovers
    ;;
host_cut_inplace)
    for i in 1 2 3 4; do echo "${RIG_ADDR[$i]} slots=4"; done >"$tmp/hosts"
    one_host "$tmp/one" rdigest "$rec" "${RECS[@]}"
    RIG_HOSTFILE=$tmp/hosts start_job "$tmp/out" 200 "${FAST[@]}" --max-restarts 2 -- "$rec" \
        "${RECS[@]}" "gate=3,$tmp/go" "hold=$tmp/hold" "${LINK[@]}"
    wait_line "$tmp/out" '^\[0\] records: at the gate$' "the gate"
    [ -z "$(workers_on 4 records_mock)" ] || fail "a worker runs on host 4 from the start"
    touch "$tmp/hold" # held past the gate until the four restarts run on host 4
    rig_link 2 down || fail "cannot cut host 2's cable"
    echo "multihost_test: cut host 2's cable for good at $(date +%T)"
    touch "$tmp/go"
    for r in 4 5 6 7; do
        wait_line "$tmp/out" "^rally-run: host ${RIG_IP[2]} (rank $r): cannot be reached: .*; restarting it on ${RIG_IP[4]} (a slot free)$" \
            "rank $r's restart on host 4"
    done
    wait_workers 4 records_mock 4
    echo "multihost_test: ranks 4-7 run on host 4:" $(workers_on 4 records_mock)
    rm -f "$tmp/hold"
    wait_job || fail "the job failed"
    cat "$tmp/out"
    host_digest "$tmp/out"
    grep -q 'lost for good' "$tmp/out" && fail "a rank was given up"
    grep -q '^rally-run: summary: .*workers=' "$tmp/out" && fail "the job changed its workers"
    rig_link 2 up
    no_leftovers
    ;;
host_cut_shrink)
    one_host "$tmp/one" rdigest "$rec" "${RECS[@]}"
    start_job "$tmp/out" 200 "${FAST[@]}" --max-restarts 2 --min-workers 8 -- "$rec" \
        "${RECS[@]}" "gate=3,$tmp/go" "${LINK[@]}"
    wait_line "$tmp/out" '^\[0\] records: at the gate$' "the gate"
    rig_link 2 down || fail "cannot cut host 2's cable"
    echo "multihost_test: cut host 2's cable for good at $(date +%T)"
    touch "$tmp/go"
    wait_job || fail "the job failed"
    cat "$tmp/out"
    host_digest "$tmp/out"
    for r in 4 5 6 7; do
        grep -q "^rally-run: host ${RIG_IP[2]} (rank $r): cannot be reached: .*: giving it up$" "$tmp/out" ||
            fail "rank $r was not given up for its host"
    done
    grep -q 'restarting it on .* (a slot free)' "$tmp/out" && fail "a rank moved with no slot free"
    grep -q '^rally-run: rank [4-7] lost for good: going on with 8 workers from version' "$tmp/out" ||
        fail "no line for the change to 8 workers"
    grep -q '^rally-run: summary: .* lost-for-good=4,5,6,7 workers=8$' "$tmp/out" || fail "summary"
    rig_link 2 up
    no_leftovers
    ;;
host_comeback)
    RECS=(1000 400)
    one_host "$tmp/one" rdigest "$rec" "${RECS[@]}"
    start_job "$tmp/out" 240 "${FAST[@]}" --max-restarts 0 --min-workers 8 --max-workers 12 \
        --rejoin-ms 1000 -- "$rec" "${RECS[@]}" pause=50 "gate=3,$tmp/go" "hold=$tmp/hold" \
        "${LINK[@]}"
    wait_line "$tmp/out" '^\[0\] records: at the gate$' "the gate"
    rig_link 2 down || fail "cannot cut host 2's cable"
    echo "multihost_test: cut host 2's cable at $(date +%T)"
    touch "$tmp/go"
    wait_line "$tmp/out" '^rally-run: rank [4-7] lost for good: going on with 8 workers from version' \
        "the change to 8 workers"
    # the job held between two checkpoints, so the joiners wait for one
    touch "$tmp/hold"
    wait_line "$tmp/out" '^\[0\] records: held$' "the hold"
    # a try on host 2 while it is down, then the cable back: the next try
    # starts a worker on each of its four slots
    wait_line "$tmp/out" 'rank [0-9]* was not started; trying a host with a slot free again every 1000 ms$' \
        "a try while host 2 is down"
    rig_link 2 up || fail "cannot mend host 2's cable"
    echo "multihost_test: mended it at $(date +%T)"
    wait_count "$tmp/out" "waits to join: it is taken in at a checkpoint" 4 "four workers waiting to join"
    [ "$(workers_on 2 records_mock | wc -l)" = 4 ] || fail "the joiners are not on host 2"
    rm -f "$tmp/hold"
    wait_line "$tmp/out" '^rally-run: taking in 4 workers: going on with 12 workers from version' \
        "the four taken in at one checkpoint"
    wait_job || fail "the job failed"
    cat "$tmp/out"
    host_digest "$tmp/out"
    grep -q '^rally-run: started ranks [0-9]*-[0-9]* on host '"${RIG_IP[2]}"' (4 slots free)' "$tmp/out" ||
        fail "the four were not started at one try"
    grep -q '^rally-run: summary: .* lost-for-good=4,5,6,7 workers=12$' "$tmp/out" || fail "summary"
    no_leftovers
    ;;
control)
    for i in $(seq 1 $H); do rig_link "$i" down; done
    start_job "$tmp/out" 60 "${FAST[@]}" --max-restarts 0 -- "$km" "${KM[@]}" "${LINK[@]}"
    wait_job
    rc=$?
    cat "$tmp/out"
    [ $rc -ne 0 ] || fail "the job succeeded with every cable down"
    [ -z "$(digest "$tmp/out")" ] || fail "a digest came out with every cable down"
    echo "multihost_test control: the job failed (status $rc), as it must"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "multihost_test $case_: passed"
