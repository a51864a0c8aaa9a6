#!/bin/sh
# make run: k-means with 4 workers on localhost — once without failures, once
# with one injected failure (librally_mock) and one kill -9 — and the two
# model digests compared.  README.md shows the output and explains each line.
set -eu
build=${1:-build}
data=$build/kmeans-demo.csv
out=$build/kmeans-demo
mkdir -p "$out"
ARGS="--data $data --data-opt csv_label=0 -k 10 --pause-ms 100"

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

echo "== 3. again: rank 2 dies in iteration 4 (injected), rank 1 gets kill -9 after iteration 8 =="
"$build/rally-run" -n 4 "$build/rally-kmeans-mock" $ARGS rally_mock=2,4,0,0 \
    >"$out/faults.out" 2>&1 &
job=$!
tail -n +1 -f --pid=$job "$out/faults.out" &
shown=$!
i=0
until grep -q '^\[0\] iteration 8 ' "$out/faults.out"; do
    i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 $job 2>/dev/null; then
        break
    fi
    sleep 0.05
done
victim=$(sed -n 's/^\[1\] shard 1 fingerprint .* pid \([0-9]*\)$/\1/p' "$out/faults.out" | tail -n 1)
if [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null; then
    echo "== run.sh: kill -9 $victim (rank 1) =="
fi
rc=0
wait $job || rc=$?
wait $shown 2>/dev/null || true
[ $rc -eq 0 ] || { echo "== the run with failures failed (status $rc) ==" >&2; exit 1; }

d1=$(grep -o 'model_digest=[0-9a-f]*' "$out/plain.out" | cut -d= -f2)
d2=$(grep -o 'model_digest=[0-9a-f]*' "$out/faults.out" | cut -d= -f2)
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
    echo "== 4. digests: no failures $d1, with 2 failures $d2: equal =="
else
    echo "== 4. digests: no failures '$d1', with 2 failures '$d2': DIFFERENT ==" >&2
    exit 1
fi
