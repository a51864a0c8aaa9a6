#!/bin/bash
# linkcut_test.sh RALLY_RUN PROG — a link between live workers really cut.
#
# Rank 2 of a 4-worker job runs in its own network namespace, joined to the
# host by a veth pair with 198.18.0.0/15 addresses and no route out; the
# tracker listens on the host end.  Once the job runs, the host end of the
# veth is brought down: rank 2's peer links and its tracker line stop moving
# data, with both processes alive.  rally_link_timeout_ms=2000 must find it
# (TCP_USER_TIMEOUT and keepalive probes): the survivors report the link,
# rank 2 loses its tracker line and exits, rally-run restarts it (this time
# outside the namespace, through the wrapper below) and the job must end
# with the failure-free digest, or fail with a clear error, well inside the
# bound.  The tracker's heartbeat timeout is set far beyond that bound
# (120 s), so only the link timeout can save the job in time; the kernel's
# defaults would take about 15 minutes.  Needs root, ip and veth: a namespace
# that cannot be made fails this test loudly, it never passes silently.
set -u
run=$1 prog=$2
ns="rallycut$$"
ha="rcH$$" na="rcN$$"
oct=$(( $$ % 250 + 1 ))
hip="198.18.$oct.1" nip="198.18.$oct.2"
tmp=$(mktemp -d)
job=""
cleanup() {
    [ -n "$job" ] && kill "$job" 2>/dev/null
    sleep 0.2
    left=$(grep -l "RALLY_TEST_TAG=linkcut-$$" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip link del "$ha" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "linkcut_test: $*"; [ -f "$tmp/out" ] && tail -50 "$tmp/out"; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "needs root to make a network namespace (not skipped: run as root)"
ip netns add "$ns" || fail "cannot create network namespace $ns"
ip link add "$ha" type veth peer name "$na" || fail "cannot create a veth pair"
ip link set "$na" netns "$ns" || fail "cannot move $na into $ns"
ip addr add "$hip/30" dev "$ha" && ip link set "$ha" up || fail "cannot set up $ha"
ip netns exec "$ns" ip addr add "$nip/30" dev "$na" &&
    ip netns exec "$ns" ip link set "$na" up &&
    ip netns exec "$ns" ip link set lo up || fail "cannot set up $na in $ns"

# rank 2's first incarnation runs in the namespace, its restarts on the host
cat >"$tmp/wrap" <<WRAP
#!/bin/sh
if [ "\$RALLY_TASK_ID" = 2 ] && mkdir "$tmp/netns-used" 2>/dev/null; then
    exec ip netns exec "$ns" "\$@"
fi
exec "\$@"
WRAP
chmod +x "$tmp/wrap"

args="3000 400 25 rally_link_timeout_ms=2000"
# shellcheck disable=SC2086
timeout -k 5 120 "$run" -n 4 --host "$hip" "$prog" $args >"$tmp/plain" 2>&1 ||
    { cat "$tmp/plain"; fail "the failure-free run failed"; }
want=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")

: >"$tmp/out"
# shellcheck disable=SC2086
RALLY_TEST_TAG="linkcut-$$" timeout -k 5 120 "$run" -n 4 --host "$hip" \
    --heartbeat-timeout-ms 120000 "$tmp/wrap" "$prog" $args >"$tmp/out" 2>&1 &
job=$!
n=0
while [ "$(grep -c '^\[[0-9]\] pid ' "$tmp/out")" -lt 4 ]; do
    n=$((n + 1)); [ "$n" -gt 300 ] && fail "the workers did not start"; sleep 0.1
done
sleep 1
pid2=$(grep '^\[2\] pid 2 ' "$tmp/out" | awk '{print $4}')
[ "$(ip netns identify "$pid2" 2>/dev/null)" = "$ns" ] || fail "rank 2 (pid $pid2) is not in $ns"
ip link set "$ha" down || fail "cannot bring $ha down"
cut=$(date +%s)
echo "linkcut_test: cut rank 2's link (pid $pid2 in $ns) at $(date +%T)"
while kill -0 "$job" 2>/dev/null && ! grep -q "recovered: epoch" "$tmp/out"; do sleep 0.1; done
took=$(( $(date +%s) - cut ))
echo "linkcut_test: $(grep -c 'recovered: epoch' "$tmp/out") recovery after $took s"
wait "$job"
rc=$?
job=""
cat "$tmp/out"
echo "linkcut_test: the job ended with status $rc; the cut was handled within $took s"
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "the job hung (killed at the test's bound)"
# the job is bounded by the link timeout, not by the 120 s heartbeat timeout
[ "$took" -lt 60 ] || fail "the cut took $took s to handle (want well under the 120 s heartbeat timeout)"
if [ "$rc" -eq 0 ]; then
    got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
    [ "$got" = "$want" ] || fail "digest $got, want $want"
    grep -q "recovered: epoch" "$tmp/out" || fail "no recovery happened"
    echo "linkcut_test: passed: re-wired, $got"
else
    grep -Eqi "timed out|time.?out" "$tmp/out" || fail "the job failed without a clear error"
    echo "linkcut_test: passed: failed with a clear error"
fi
