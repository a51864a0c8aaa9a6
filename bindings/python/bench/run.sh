#!/bin/sh
# bindings/python/bench/run.sh BUILD_DIR [N] — the Python binding beside C:
# rally.allreduce on float32 numpy arrays against bench/bench_allreduce (the
# C program) and against the bare C function called from the same Python
# process, at the same sizes with N workers (default 2), then the cost of a
# pickled 100 MiB checkpoint.  Prints one table; bench.py says the method.
set -eu
build=$1
n=${2:-2}
here=$(dirname "$0")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
sizes="8:2000 64:2000 512:2000 4096:1000 32768:500 65536:300 262144:200 1048576:60 8388608:15"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2086 # the size list splits on purpose
"$build/rally-run" -n "$n" "$build/bench/bench_allreduce" $sizes >"$out/c" 2>&1 ||
    { cat "$out/c"; exit 1; }
# shellcheck disable=SC2086
PYTHONPATH="$build/python" "$build/rally-run" -n "$n" "$py" "$here/bench.py" allreduce $sizes \
    >"$out/py" 2>&1 || { cat "$out/py"; exit 1; }
echo "allreduce, float32 sum, $n workers: median microseconds (bench/bench_common.h's method)"
echo "  C: bench/bench_allreduce; bare: rally_allreduce through ctypes from Python;"
echo "  rally.allreduce: the binding; overhead: rally.allreduce - bare (same process, same buffer)"
printf '%10s %10s %10s %16s %10s\n' bytes C bare rally.allreduce overhead
grep -h '^\[0\] RESULT' "$out/c" | awk '{print $3, $5}' | sort >"$out/c.t"
grep -h '^\[0\] BARE' "$out/py" | awk '{print $3, $5}' | sort >"$out/bare.t"
grep -h '^\[0\] RESULT' "$out/py" | awk '{print $3, $5}' | sort >"$out/py.t"
join "$out/c.t" "$out/bare.t" | join - "$out/py.t" | sort -n |
    awk '{printf "%10d %10.1f %10.1f %16.1f %10.1f\n", $1, $2, $3, $4, $4 - $3}'
PYTHONPATH="$build/python" "$build/rally-run" -n "$n" "$py" "$here/bench.py" ckpt 100 5 >"$out/ck" 2>&1 ||
    { cat "$out/ck"; exit 1; }
echo "checkpoint of a 100 MiB model (a float64 array in a dict), $n workers, median of 5:"
grep -h '^\[0\] CKPT' "$out/ck" | sed 's/^\[0\] CKPT /  bytes /'
