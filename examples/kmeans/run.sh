#!/bin/sh
# make run: k-means with 4 workers on localhost — once without failures, once
# with one injected failure (librally_mock), one kill -9 of a worker and, after
# a durable snapshot was committed, kill -9 of the whole job (launcher and
# workers), resumed from that snapshot — and the two model digests compared.  README.md shows the output and explains each line.
set -eu
build=${1:-build}
data=$build/kmeans-demo.csv
out=$build/kmeans-demo
mkdir -p "$out"
ARGS="--data $data --data-opt csv_label=0 -k 10 --pause-ms 100"
# 0.3 s per iteration in runs 3 and 5: room for the script's kills to land
# where it says (the pause is part of the configuration a resume must share)
SLOW="--data $data --data-opt csv_label=0 -k 10 --pause-ms 300"

echo "== 1. data: 200000 rows x 16 features around 10 centres (rally-datagen) =="
"$build/rally-datagen" --rows 200000 --features 16 --centers 10 --spread 5 --seed 42 \
    --format csv -o "$data" 2>&1

echo "== 2. k-means, 4 workers, no failures (rally-run -n 4 rally-kmeans) =="
"$build/rally-run" -n 4 "$build/rally-kmeans" $ARGS >"$out/plain.out" 2>&1 || {
    cat "$out/plain.out"
    echo "== the failure-free run failed ==" >&2
    exit 1
}
cat "$out/plain.out"

echo "== 3. again, snapshots every 2 versions: rank 2 dies in iteration 4 (injected), rank 1 gets kill -9 after iteration 5, then the whole job (launcher and workers) gets kill -9 once the next snapshot is committed =="
snaps=$out/snapshots
rm -rf "$snaps"
"$build/rally-run" -n 4 --snapshot-dir "$snaps" --snapshot-every 2 "$build/rally-kmeans-mock" \
    $SLOW rally_mock=2,4,0,0 >"$out/faults.out" 2>&1 &
job=$!
tail -n +1 -f --pid=$job "$out/faults.out" &
shown=$!
# waits (up to 30 s) until more than $2 (default 0) lines match $1 in the
# run's output; 1 when the job ended first
await() {
    i=0
    until [ "$(grep -c "$1" "$out/faults.out")" -gt "${2:-0}" ]; do
        i=$((i + 1))
        if [ $i -gt 600 ] || ! kill -0 $job 2>/dev/null; then
            return 1
        fi
        sleep 0.05
    done
}
pids() { # the newest pid of each rank's worker
    for r in 0 1 2 3; do
        sed -n "s/^\[$r\] shard $r fingerprint .* pid \([0-9]*\)\$/\1/p" "$out/faults.out" | tail -n 1
    done
}
await '^\[0\] iteration 5 ' || true
victim=$(pids | sed -n 2p)
committed=$(grep -c 'snapshot: committed' "$out/faults.out")
if [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null; then
    echo "== run.sh: kill -9 $victim (rank 1) =="
fi
if ! await 'snapshot: committed' "$committed"; then
    wait $job
    kill $shown 2>/dev/null
    echo "== no snapshot was committed after the kill of rank 1 ==" >&2
    exit 1
fi
workers=$(pids)
kill -9 $job $workers 2>/dev/null || true
echo "== run.sh: kill -9 $job (rally-run) $(echo $workers) (workers) =="
wait $job 2>/dev/null || true
wait $shown 2>/dev/null || true
if grep -q '^\[0\] result:' "$out/faults.out"; then
    kill $shown 2>/dev/null
    echo "== the job finished before it was killed ==" >&2
    exit 1
fi

echo "== 4. what the killed job left (rally-snapshot ls) =="
"$build/rally-snapshot" ls "$snaps/rally-kmeans-mock"

echo "== 5. the same job resumed from its newest complete snapshot (rally-run --resume latest) =="
"$build/rally-run" -n 4 --snapshot-dir "$snaps" --snapshot-every 2 --resume latest \
    "$build/rally-kmeans-mock" $SLOW >"$out/resumed.out" 2>&1 || {
    cat "$out/resumed.out"
    echo "== the resumed run failed ==" >&2
    exit 1
}
cat "$out/resumed.out"

d1=$(grep -o 'model_digest=[0-9a-f]*' "$out/plain.out" | cut -d= -f2)
d2=$(grep -o 'model_digest=[0-9a-f]*' "$out/resumed.out" | cut -d= -f2)
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
    echo "== 6. digests: no failures $d1, with 2 failures and a whole-job kill -9 + resume $d2: equal =="
else
    echo "== 6. digests: no failures '$d1', with failures and a resume '$d2': DIFFERENT ==" >&2
    exit 1
fi
