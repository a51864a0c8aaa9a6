#!/bin/sh
# bench/torch.sh BUILD_DIR — rally.torch's data-parallel MLP
# (bindings/python/examples/torch_mlp.py: bucketed gradient allreduce and a
# checkpoint of the module and optimizer every step) beside torch.distributed
# with Gloo (bindings/python/bench/torch_gloo.py: DistributedDataParallel, no
# checkpoints), the same model, batches and N, one thread per rank.  Rounds
# run rally, gloo, gloo, rally (ABBA); prints the median time per step of
# each and the ratio gloo / rally (above 1: rally is faster) with its range.
# Two widths: hidden 64 (6 k parameters, 25 KB of gradients a step: latency)
# and hidden 512 (280 k parameters, 1.1 MB a step: compute and bandwidth).
#   BENCH_TORCH_NS="2 4"  BENCH_TORCH_HIDDEN="64 512"  BENCH_TORCH_STEPS=200
#   BENCH_TORCH_ROUNDS=2
set -eu
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
steps=${BENCH_TORCH_STEPS:-200}
rounds=${BENCH_TORCH_ROUNDS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rally_run() { # N HIDDEN -> seconds per step
    PYTHONPATH="$build/python" timeout 600 "$build/rally-run" -n "$1" "$py" \
        "$src/bindings/python/examples/torch_mlp.py" --steps "$steps" --hidden "$2" >"$out/r" 2>&1 ||
        { cat "$out/r" >&2; return 1; }
    sed -n 's/^\[0\] time per step \([0-9.]*\) s$/\1/p' "$out/r"
}
gloo_run() { # N HIDDEN -> seconds per step
    port=$((20000 + $$ % 20000))
    pids=""
    for r in $(seq 0 $(($1 - 1))); do
        PYTHONPATH="$build/python" RANK=$r WORLD_SIZE=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 600 "$py" \
            "$src/bindings/python/bench/torch_gloo.py" --steps "$steps" --hidden "$2" >"$out/g$r" 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || { cat "$out"/g* >&2; return 1; }; done
    sed -n 's/^time per step \([0-9.]*\) s$/\1/p' "$out/g0"
}
echo "torch MLP ($steps steps, batch 64 per rank, 1 thread per rank): ms per step, median of $((rounds * 2)) (rally, gloo, gloo, rally)"
printf '%6s %4s %12s %12s %18s\n' hidden N rally.torch gloo "gloo/rally (range)"
for h in ${BENCH_TORCH_HIDDEN:-64 512}; do
for n in ${BENCH_TORCH_NS:-2 4}; do
    : >"$out/rs"
    : >"$out/gs"
    i=0
    while [ "$i" -lt "$rounds" ]; do
        rally_run "$n" "$h" >>"$out/rs"
        gloo_run "$n" "$h" >>"$out/gs"
        gloo_run "$n" "$h" >>"$out/gs"
        rally_run "$n" "$h" >>"$out/rs"
        i=$((i + 1))
    done
    paste "$out/rs" "$out/gs" | awk -v n="$n" -v h="$h" '
        { r[NR] = $1 * 1000; g[NR] = $2 * 1000; q[NR] = $2 / $1 }
        function med(a, k,   i, j, t, b) { for (i = 1; i <= k; i++) b[i] = a[i]
            for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
            return k % 2 ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2 }
        END { lo = q[1]; hi = q[1]; for (i = 2; i <= NR; i++) { if (q[i] < lo) lo = q[i]; if (q[i] > hi) hi = q[i] }
              printf "%6d %4d %12.3f %12.3f %9.2fx (%.2f-%.2f)\n", h, n, med(r, NR), med(g, NR), med(q, NR), lo, hi }'
done
done
