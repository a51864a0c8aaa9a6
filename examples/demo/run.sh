#!/bin/sh
# make run: a 4-worker job on localhost, twice, and the two digests compared.
set -e
build=${1:-build}
echo "== rally demo: 4 workers on localhost (rally-run -n 4 rally-demo) =="
"$build/rally-run" -n 4 "$build/rally-demo" | tee "$build/demo-1.out"
echo "== again: the same job must give the same digest, bit for bit =="
"$build/rally-run" -n 4 "$build/rally-demo" | tee "$build/demo-2.out"
d1=$(grep -o 'digest [0-9a-f]*' "$build/demo-1.out")
d2=$(grep -o 'digest [0-9a-f]*' "$build/demo-2.out")
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
    echo "== both runs: $d1 (equal) =="
else
    echo "== digests differ: '$d1' vs '$d2' ==" >&2
    exit 1
fi
