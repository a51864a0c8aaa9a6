#!/bin/sh
# chaos_rewire.sh BUILDDIR [SEEDS] [KILLS] [N] — the long variant of the
# chaos_rewire_* tests, by hand: SEEDS seeded runs (default 20) of an
# N-worker job (default 8) with KILLS kill -9 deaths each (default 10),
# spaced 20-200 ms apart without waiting for recoveries.  Every run must end
# with the failure-free digest; prints each run's verdict and wall time,
# then the count.  Not part of ctest: it takes minutes.
set -u
b=${1:?usage: chaos_rewire.sh BUILDDIR [SEEDS] [KILLS] [N]}
seeds=${2:-20} kills=${3:-10} n=${4:-8}
here=$(dirname "$0")
ok=0 i=1
log=$(mktemp)
while [ "$i" -le "$seeds" ]; do
    t0=$(date +%s.%N)
    if "$here/../tests/jobs/chaos_rewire_test.sh" "$b/rally-run" "$b/tests/recover" "$n" "$i" "$kills" \
        >"$log" 2>&1; then
        ok=$((ok + 1)); v=passed
    else
        cp "$log" "$log.seed$i"
        v="FAILED (log: $log.seed$i)"
    fi
    printf 'seed %d: %s in %.1f s\n' "$i" "$v" "$(echo "$(date +%s.%N) - $t0" | bc)"
    i=$((i + 1))
done
rm -f "$log"
echo "chaos_rewire: $ok of $seeds runs ended with the failure-free digest (N $n, $kills kills each)"
[ "$ok" -eq "$seeds" ]
