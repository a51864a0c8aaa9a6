#!/bin/sh
# numpy_mlp_test.sh <build> <srcdir> <python> — the numpy MLP that make
# bench times beside Gloo (bindings/python/bench/numpy_mlp.py) computes what
# it says: at N = 2 rally's weights after 60 steps (a lazy checkpoint every
# step) equal Gloo's (a sum of two is the same whoever adds), and equal
# them again when rank 1 dies entering step 30's allreduce (librally_mock)
# and is restarted from the survivors' checkpoint.  <python> has torch (the
# checkout's .venv).
set -eu
build=$1 src=$2 py=$3
prog=$src/bindings/python/bench/numpy_mlp.py
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rally-numpy-mlp.XXXXXX")
pids=
trap 'kill $pids 2>/dev/null || :; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$tmp"/* >&2; exit 1; }
weights() { sed -n 's/^\(\[0\] \)\{0,1\}weights \([0-9a-f]*\)$/\2/p' "$1"; }

PYTHONPATH=$build/python timeout 300 "$build/rally-run" -n 2 "$py" "$prog" --steps 60 \
    >"$tmp/rally" 2>&1 || fail "the rally job failed"
PYTHONPATH=$build/python RALLY_PYTHON_MOCK=1 timeout 300 "$build/rally-run" -n 2 "$py" "$prog" \
    --steps 60 rally_mock=1,30,0,0 >"$tmp/killed" 2>&1 || fail "the job with a death failed"
grep -q "deaths=1 recovered=1" "$tmp/killed" || fail "rank 1 did not die and come back"
port=$((20000 + $$ % 20000))
for r in 0 1; do
    RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 300 "$py" "$prog" \
        --gloo --steps 60 >"$tmp/gloo$r" 2>&1 &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "the Gloo job failed"; done
pids=
a=$(weights "$tmp/rally") b=$(weights "$tmp/killed") c=$(weights "$tmp/gloo0")
[ -n "$a" ] && [ -n "$c" ] || fail "no weights printed"
[ "$a" = "$c" ] || fail "rally's weights $a, Gloo's $c"
[ "$a" = "$b" ] || fail "after a death $b, without $a"
echo "numpy_mlp_test: ok (weights $a)"
