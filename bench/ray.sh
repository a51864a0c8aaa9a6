#!/bin/sh
# bench/ray.sh BUILD_DIR — the time from a kill -9 to the job back in step
# under rally.ray beside Ray Train's restart from its checkpoint, on the same
# small job: docs/ray.md's k-means (extracted from the page), 4 ranks of 1
# CPU on a local two-node Ray cluster (ray, torch from PyPI in the
# checkout's .venv: scripts/deps.sh), rank 1 killed at iteration 5.  Ray
# Train runs it as a TorchTrainer on CPU (gloo), a checkpoint every
# iteration, FailureConfig(max_failures=3).  Rounds interleave ABBA
# (bindings/python/bench/ray_restart.py); median (min-max) over the rounds,
# this machine's memcpy and its load beside them.
#   BENCH_RAY_ROUNDS=2
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
py=$src/.venv/bin/python
[ -x "$py" ] || { echo "bench ray: no $py (make deps: scripts/deps.sh)" >&2; exit 1; }
rounds=${BENCH_RAY_ROUNDS:-2}
out=$(mktemp -d "$build/bench-ray.XXXXXX")
trap 'rm -rf "$out"' EXIT
# the page's program, as the tests run it
awk '/^## The program/ { p = 1 } p && /^```python/ { q = 1; next } q && /^```/ { exit } q' \
    "$src/docs/ray.md" >"$out/ray_kmeans.py"
echo "rally.ray beside Ray Train: docs/ray.md's k-means, 4 ranks of 1 CPU on 2 Ray nodes of 2 CPUs,"
echo "rank 1 killed -9 at iteration 5 of 12, $rounds rounds ABBA; median (min-max)"
"$build/bench/ceiling" memcpy | awk '{ printf "  %-54s %9.1f  GB/s\n", "memcpy (this machine, same block)", $3 }'
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
PYTHONPATH="$build/python" timeout 3600 "$py" "$src/bindings/python/bench/ray_restart.py" \
    "$out" "$rounds" >"$out/res" 2>"$out/err" || { tail -n 30 "$out/err" "$out/res" >&2; exit 1; }
sed 's/^/  /' "$out/res"
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
