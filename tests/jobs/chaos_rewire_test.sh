#!/bin/sh
# chaos_rewire_test.sh RALLY_RUN PROG N SEED KILLS [ARGS...] — kill -9 random
# workers of an N-worker job at intervals of 20-200 ms drawn from SEED,
# without waiting for the previous recovery, so deaths land while the others
# re-wire, rejoin or are still inside rally_init.  Checks that the job ends
# with the failure-free digest, that rally-run counted exactly the kills that
# hit a live worker, and that nothing is left behind.  The CI runs a few
# seeds with a few kills; bench/chaos_rewire.sh runs many by hand.
set -u
run=$1 prog=$2 n=$3 seed=$4 kills=$5
shift 5
here=$(dirname "$0")
tmp=$(mktemp -d)
tag="chaos-rewire-$$"
job=""
cleanup() {
    [ -n "$job" ] && kill "$job" 2>/dev/null
    left=$(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "chaos_rewire_test: $*"; tail -60 "$tmp/out"; exit 1; }

"$here/../rigs/run_job.sh" 0 60 "$run" -n "$n" "$prog" 3000 40 60 "$@" >"$tmp/plain" 2>&1 || {
    cat "$tmp/plain"; fail "the failure-free run failed"; }
want=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")

: >"$tmp/out"
RALLY_TEST_TAG=$tag timeout -k 5 90 "$run" -n "$n" --max-restarts "$kills" "$prog" 3000 40 60 \
    "$@" >"$tmp/out" 2>&1 &
job=$!
plan=$(awk -v s="$seed" -v k="$kills" -v n="$n" 'BEGIN { srand(s); for (i = 0; i < k; i++)
    printf "%d %d\n", int(rand() * n), 20 + int(rand() * 181) }')
w=0
while [ "$(grep -c '^\[[0-9]*\] pid ' "$tmp/out")" -lt "$n" ]; do
    w=$((w + 1)); [ "$w" -gt 600 ] && fail "the workers did not start"; sleep 0.05
done
sleep 0.3
hit=0
echo "$plan" >"$tmp/plan"
while read -r rank delay; do
    kill -0 "$job" 2>/dev/null || break # the job ended: the plan was too long
    sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
    pid=$(grep "^\[$rank\] pid $rank " "$tmp/out" | tail -n 1 | awk '{print $4}')
    # a restarted worker that has not printed its pid yet: its old pid is gone
    if grep -qx "$pid" "$tmp/killed" 2>/dev/null; then
        echo "chaos: rank $rank after $delay ms: no new pid yet, skipped"
        continue
    fi
    if kill -9 "$pid" 2>/dev/null; then
        echo "$pid" >>"$tmp/killed"
        hit=$((hit + 1))
        echo "chaos: kill $hit: rank $rank (pid $pid) after $delay ms"
    fi
done <"$tmp/plan"
wait "$job" || fail "the job failed"
job=""
grep "recovered: epoch" "$tmp/out" | sed 's/^rally-run: /chaos: /'
got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
[ "$got" = "$want" ] || fail "digest $got, want $want"
grep -q "summary: deaths=$hit " "$tmp/out" || fail "want deaths=$hit: $(grep summary "$tmp/out")"
if grep -Eq "RALLY_UNKNOWN|\(100\)" "$tmp/out"; then
    fail "an internal status reached the user"
fi
sleep 0.3
left=$(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
[ -z "$left" ] || fail "processes left behind: $left"
echo "chaos_rewire_test: passed (N $n, seed $seed, $hit kills, $got)"
