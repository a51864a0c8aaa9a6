#!/bin/sh
# bench/torch.sh BUILD_DIR — rally.torch's data-parallel MLP
# (bindings/python/examples/torch_mlp.py: bucketed gradient allreduce and a
# checkpoint of the module and optimizer every step, lazy: a memcpy into
# buffers reused every step) beside the same with --eager (the state pickled
# and compared every step, as rally.torch.checkpoint's default does) and
# torch.distributed with Gloo (bindings/python/bench/torch_gloo.py:
# DistributedDataParallel, no checkpoints), the same model, batches and N,
# one thread per rank.  Each block (a width and an N) runs its rounds
# interleaved lazy, eager, gloo, gloo, eager, lazy, ..., and prints the
# median ms per step of each and the ratios gloo / rally round by round
# (above 1: rally is faster), median and range, with the load average and
# this machine's memcpy rate (bench/ceiling) before and after the block.
# Two widths: hidden 64 (6 k parameters, 25 KB of gradients a step:
# latency) and hidden 512 (280 k parameters, 1.1 MB a step: compute and
# bandwidth).  The Python is the checkout's .venv's (scripts/deps.sh: a
# current torch from PyPI) when there is one, else /usr/bin/python3.
#   BENCH_TORCH_NS="2 4"  BENCH_TORCH_HIDDEN="64 512"  BENCH_TORCH_STEPS=200
#   BENCH_TORCH_ROUNDS=4  BENCH_TORCH_PYTHON=...
set -eu
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/lib.sh"
py=${BENCH_TORCH_PYTHON:-$src/.venv/bin/python}
[ -x "$py" ] || py=/usr/bin/python3
[ -x "$py" ] || py=python3
steps=${BENCH_TORCH_STEPS:-200}
rounds=${BENCH_TORCH_ROUNDS:-4}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=2
h=64
rally_steps() { # ARGS... -> seconds per step
    PYTHONPATH="$build/python" timeout 600 "$build/rally-run" -n "$n" "$py" \
        "$src/bindings/python/examples/torch_mlp.py" --steps "$steps" --hidden "$h" "$@" \
        >"$out/r" 2>&1 || { cat "$out/r" >&2; return 1; }
    sed -n 's/^\[0\] time per step \([0-9.]*\) s$/\1/p' "$out/r"
}
lazy() { v=$(rally_steps) && echo "lazy $v"; }
eager() { v=$(rally_steps --eager) && echo "eager $v"; }
gloo() {
    port=$((20000 + ($$ + $1) % 20000))
    pids=""
    for r in $(seq 0 $((n - 1))); do
        PYTHONPATH="$build/python" RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            timeout 600 "$py" "$src/bindings/python/bench/torch_gloo.py" --steps "$steps" \
            --hidden "$h" >"$out/g$r" 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || { cat "$out"/g* >&2; return 1; }; done
    v=$(sed -n 's/^time per step \([0-9.]*\) s$/\1/p' "$out/g0") && echo "gloo $v"
}
load() { uptime | sed 's/.*load average: \([0-9.]*\).*/\1/'; }
memcpy() { "$build/bench/ceiling" memcpy 2>/dev/null | awk '{ print $3 }'; }
echo "torch MLP ($steps steps, batch 64 per rank, 1 thread per rank, $("$py" -c 'import torch; print("torch", torch.__version__)')): ms per step, median (min-max) of $rounds rounds interleaved lazy, eager, gloo, gloo, eager, lazy"
printf '%6s %3s %13s %13s %8s %20s %20s  %s\n' hidden N "rally lazy" "rally eager" gloo \
    "gloo/lazy (range)" "gloo/eager (range)" "load, memcpy GB/s before -> after"
for h in ${BENCH_TORCH_HIDDEN:-64 512}; do
    for n in ${BENCH_TORCH_NS:-2 4}; do
        l0=$(load)
        m0=$(memcpy)
        interleave "$rounds" lazy eager gloo >"$out/t"
        ms() { spread "$out/t" "$1" | awk '{ printf "%.3f", $2 * 1000 }'; }
        x() { spread "$out/t" gloo "$1" | awk '{ printf "%.2fx (%.2f-%.2f)", $2, $1, $3 }'; }
        printf '%6d %3d %13s %13s %8s %20s %20s  %s, %s -> %s, %s\n' "$h" "$n" "$(ms lazy)" \
            "$(ms eager)" "$(ms gloo)" "$(x lazy)" "$(x eager)" "$l0" "$m0" "$(load)" "$(memcpy)"
    done
done
