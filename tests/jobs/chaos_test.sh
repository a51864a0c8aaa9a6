#!/bin/sh
# chaos_test.sh RALLY_RUN PROG SEED KILLS [ARGS...] — kill -9 random workers at random
# moments (drawn from SEED) while a 4-worker job runs, and check that the
# final model is bit-identical to a run without failures, that rally-run
# counted exactly KILLS deaths, and that nothing is left behind.  Prints, for
# each kill, the rank, how long after the previous event it came, and where
# the job stood when it was back in step (version, seq).
set -u
run=$1 prog=$2 seed=$3 kills=$4
shift 4 # the rest go to the job (e.g. "local": local models on)
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tag="chaos-$$"
fail() { echo "chaos_test: $*"; tail -40 "$tmp/out"; exit 1; }

"$here/../rigs/run_job.sh" 0 60 "$run" -n 4 "$prog" 3000 60 50 "$@" >"$tmp/plain" 2>&1 || {
    cat "$tmp/plain"; fail "the failure-free run failed"; }
want=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")

RALLY_TEST_TAG=$tag timeout -k 5 90 "$run" -n 4 --max-restarts 10 "$prog" 3000 60 50 "$@" \
    >"$tmp/out" 2>&1 &
job=$!
# the random plan: kills x (rank, delay in ms), from the seed
plan=$(awk -v s="$seed" -v k="$kills" 'BEGIN { srand(s); for (i = 0; i < k; i++)
    printf "%d %d\n", int(rand() * 4), 50 + int(rand() * 400) }')
i=0
echo "$plan" | while read -r rank delay; do
    i=$((i + 1))
    n=0
    kill -0 "$job" 2>/dev/null || break # the job ended: the plan was too long
    while [ "$(grep -c "^\[$rank\] pid $rank " "$tmp/out")" -eq 0 ]; do
        n=$((n + 1)); [ "$n" -gt 300 ] && break; sleep 0.1
    done
    # wait for the previous recovery, and for the restarted worker to have
    # loaded its checkpoint (with local models, that is when the copies it
    # holds for its neighbours exist again: a kill before it would be a
    # simultaneous death of k + 1 holders, which is correctly fatal)
    while [ "$(grep -c 'recovered: epoch' "$tmp/out")" -lt $((i - 1)) ] ||
          [ "$(grep -c '\] rank [0-9]* restarted at version' "$tmp/out")" -lt $((i - 1)) ]; do
        n=$((n + 1)); [ "$n" -gt 600 ] && break; sleep 0.05
    done
    sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
    pid=$(grep "^\[$rank\] pid $rank " "$tmp/out" | tail -n 1 | awk '{print $4}')
    kill -9 "$pid" 2>/dev/null && echo "chaos: kill $i: rank $rank (pid $pid) after $delay ms"
done
wait "$job" || fail "the job failed"
grep "recovered: epoch" "$tmp/out" | sed 's/^rally-run: /chaos: /'
got=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
[ "$got" = "$want" ] || fail "digest $got, want $want"
grep -q "summary: deaths=$kills " "$tmp/out" || fail "want deaths=$kills: $(grep summary "$tmp/out")"
sleep 0.3
left=$(grep -l "RALLY_TEST_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
[ -z "$left" ] || { kill -9 $left; fail "processes left behind: $left"; }
echo "chaos_test: passed (seed $seed, $kills kills, $got)"
