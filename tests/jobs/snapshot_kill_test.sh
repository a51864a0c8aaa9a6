#!/bin/sh
# snapshot_kill_test.sh RALLY-SNAPSHOT SNAPSHOT_MK SEED ROUNDS
# kill -9 of a process in the middle of writing a snapshot, at moments drawn
# from SEED: afterwards every snapshot directory either verifies (it was
# committed) or is incomplete and never verifies; the one "latest" names
# always verifies.  Prints how many writes were cut short.
set -u
tool=$1 mk=$2 seed=$3 rounds=$4
d=$(mktemp -d /tmp/rally-snapshot-kill-XXXXXX)
trap 'rm -rf "$d"' EXIT
RA=0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
head -c 33554432 /dev/urandom > "$d/model.bin"
# how long one write takes here: the kill delays range over twice that
t0=$(date +%s%N)
"$mk" "$d/calib" job "$RA" 2026-11-30T08:00:00.000000Z 1 4 --global "$d/model.bin" --locals \
    >/dev/null || { echo "FAIL: snapshot_mk"; exit 1; }
ms=$(( ($(date +%s%N) - t0) / 1000000 + 1 ))
echo "one write takes ~$ms ms; kills within 0..$((2 * ms)) ms (seed $seed)"
delays=$(awk -v s="$seed" -v n="$rounds" -v m="$ms" \
    'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%.3f\n", rand() * 2 * m / 1000 }')
fails=0 cut=0 whole=0 v=0
for delay in $delays; do
    v=$((v + 1))
    "$mk" "$d/snaps" job "$RA" 2026-11-30T08:00:00.000000Z "$v" 4 --global "$d/model.bin" \
        --locals >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    snap=$(printf '%s/snaps/job/snap-%08d' "$d" "$v")
    [ -d "$snap" ] || { cut=$((cut + 1)); continue; } # killed before its first mkdir
    out=$("$tool" verify "$snap" 2>&1)
    rc=$?
    if [ -e "$snap/MANIFEST.json" ]; then
        whole=$((whole + 1))
        [ "$rc" -eq 0 ] || { echo "FAIL v$v: committed but does not verify: $out"; fails=$((fails + 1)); }
    else
        cut=$((cut + 1))
        [ "$rc" -eq 1 ] && echo "$out" | grep -q "incomplete" ||
            { echo "FAIL v$v: torn, yet: $out (exit $rc)"; fails=$((fails + 1)); }
    fi
done
if [ -d "$d/snaps/job" ]; then
    latest=$("$tool" verify "$d/snaps/job/latest" 2>&1)
    rc=$?
    if [ "$whole" -gt 0 ] && [ "$rc" -ne 0 ]; then
        echo "FAIL latest: $latest"; fails=$((fails + 1))
    fi
    "$tool" ls "$d/snaps/job" | head -n 4
fi
echo "snapshot_kill: $rounds kills, $cut writes cut short, $whole committed, $fails failed"
[ "$fails" -eq 0 ]
