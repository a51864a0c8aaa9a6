#!/bin/sh
# chaos_local.sh BUILDDIR [SEEDS] [KILLS] — seeded kill -9 series of a job
# with local models, by hand (minutes; not part of ctest):
#   free    kills 20-500 ms apart, not waiting for anything, with snapshots
#           (--snapshot-every 3), at N = 4 and 8 over shm and tcp: every run
#           must end with the failure-free digest unless k + 1 holders of
#           one local model died within one recovery ("are lost"), which is
#           counted, not failed;
#   spaced  each kill 20-250 ms after the previous recovery ended, N = 4,
#           k = 1 and 2, and a replacement that spends 300 ms before its
#           first collective (startup=300: a trainer reading its shard):
#           with the kills spaced beyond the recovery, no model may be lost.
# Prints one line per run (mode, N, transport, k, seed, exit status, digest,
# deaths, "lost" lines) and a count per mode; exits 1 when a run went wrong.
set -u
b=${1:?usage: chaos_local.sh BUILDDIR [SEEDS] [KILLS]}
seeds=${2:-6} kills=${3:-5}
run=$b/rally-run prog=$b/tests/recover
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one MODE N SEED LO HI ARGS...: one job, kills from the seed
one() {
    mode=$1 n=$2 seed=$3 lo=$4 hi=$5
    shift 5
    snap=""
    [ "$mode" = free ] && snap="--snapshot-dir $tmp/snap-$seed --snapshot-every 3"
    # shellcheck disable=SC2086 # the option list splits on purpose
    timeout -k 5 120 "$run" -n "$n" --max-restarts 20 $snap "$prog" 3000 60 50 local "$@" \
        >"$tmp/out" 2>&1 &
    job=$!
    until [ "$(grep -c '\] pid ' "$tmp/out")" -ge "$n" ]; do sleep 0.05; done
    sleep 0.3
    i=0
    awk -v s="$seed" -v k="$kills" -v n="$n" -v lo="$lo" -v hi="$hi" 'BEGIN { srand(s)
        for (i = 0; i < k; i++) printf "%d %d\n", int(rand() * n), lo + int(rand() * (hi - lo)) }' |
        while read -r rank delay; do
            kill -0 "$job" 2>/dev/null || break
            w=0
            while [ "$mode" = spaced ] && [ "$(grep -c 'recovered: epoch' "$tmp/out")" -lt "$i" ]; do
                w=$((w + 1)); [ "$w" -gt 1000 ] && break; sleep 0.01
            done
            i=$((i + 1))
            sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
            pid=$(grep "^\[$rank\] pid $rank " "$tmp/out" | tail -n 1 | awk '{print $4}')
            kill -9 "$pid" 2>/dev/null
        done
    wait "$job"
    rc=$?
    rm -rf "$tmp/snap-$seed"
    d=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out" | head -n 1)
    deaths=$(sed -n 's/.*summary: deaths=\([0-9]*\).*/\1/p' "$tmp/out")
    lost=$(grep -c 'are lost' "$tmp/out")
    echo "$rc ${d#model_digest=} ${deaths:-?} $lost"
}

bad=0
for mode in free spaced; do
    runs=0 lostruns=0 wrong=0
    for cfg in $([ "$mode" = free ] && echo "4:shm:2 4:tcp:2 8:shm:2 8:tcp:2" ||
                 echo "4:auto:1 4:auto:2"); do
        n=${cfg%%:*} rest=${cfg#*:}
        t=${rest%%:*} k=${rest#*:}
        want=$("$run" -n "$n" "$prog" 3000 60 50 local rally_local_replica="$k" 2>&1 |
               grep -o 'model_digest=[0-9a-f]*' | head -n 1)
        want=${want#model_digest=}
        s=1
        while [ "$s" -le "$seeds" ]; do
            if [ "$mode" = free ]; then
                set -- free "$n" "$s" 20 500 rally_local_replica="$k"
            else
                set -- spaced "$n" "$s" 20 250 rally_local_replica="$k" startup=300
            fi
            r=$(RALLY_TRANSPORT=$t one "$@")
            set -- $r
            runs=$((runs + 1))
            verdict=ok
            if [ "$4" -gt 0 ] && [ "$mode" = free ]; then
                lostruns=$((lostruns + 1)); verdict="lost (k + 1 within one recovery)"
            elif [ "$1" -ne 0 ] || [ "$2" != "$want" ]; then
                wrong=$((wrong + 1)); verdict=WRONG
            fi
            echo "$mode n=$n $t k=$k seed=$s rc=$1 digest=$2 want=$want deaths=$3 lost=$4: $verdict"
            s=$((s + 1))
        done
    done
    echo "chaos_local $mode: $runs runs, $lostruns lost a model, $wrong wrong"
    [ "$wrong" -eq 0 ] || bad=1
done
exit $bad
