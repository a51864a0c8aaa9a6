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
# With torchft importable there (scripts/deps.sh pins it), its
# fault-tolerant DDP (bindings/python/bench/torch_ft.py: a lighthouse, each
# rank a replica group of one, Gloo) runs in the same rounds, and a last
# block kills rank 1 (-9) before step 50 of 100 in rally.torch and in
# torchft, and times the kill to the restarted rank's first step done
# ("back in step"), interleaved rally, torchft, torchft, rally.  Then the
# same MLP in numpy (bindings/python/bench/numpy_mlp.py): rally.allreduce
# with a lazy checkpoint every step, and without, beside Gloo's all_reduce
# of the same array.
#   BENCH_TORCH_NS="2 4"  BENCH_TORCH_HIDDEN="64 512"  BENCH_TORCH_STEPS=200
#   BENCH_TORCH_ROUNDS=4  BENCH_TORCH_PYTHON=...
set -eu
build=$(cd "$1" && pwd)
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
    # (the clock runs from the first step: a loaded machine may take minutes to import torch)
    PYTHONPATH="$build/python" timeout 600 "$build/rally-run" -n "$n" --startup-timeout-ms 600000 "$py" \
        "$src/bindings/python/examples/torch_mlp.py" --steps "$steps" --hidden "$h" "$@" \
        >"$out/r" 2>&1 || { cat "$out/r" >&2; return 1; }
    sed -n 's/^\[0\] time per step \([0-9.]*\) s$/\1/p' "$out/r"
}
lazy() { v=$(rally_steps) && echo "lazy $v"; }
eager() { v=$(rally_steps --eager) && echo "eager $v"; }
ft_job() { # [KILL_STEP] -> the replicas' outputs in $out/f0 ..; replica 1 killed at KILL_STEP, restarted once
    rm -f "$out"/lh "$out"/started-* "$out"/killed
    PYTHONPATH="$build/python" timeout 900 "$py" "$src/bindings/python/bench/torch_ft.py" \
        --serve-lighthouse "$n" "$out/lh" \
        >"$out/lh.out" 2>&1 &
    lh=$!
    i=0
    while [ ! -s "$out/lh" ] && [ "$i" -lt 600 ] && kill -0 "$lh" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -s "$out/lh" ] || { cat "$out/lh.out" >&2; kill "$lh" 2>/dev/null; return 1; }
    pids=""
    for r in $(seq 0 $((n - 1))); do
        k=""
        [ "$r" = 1 ] && [ -n "${1:-}" ] && k="--kill $1"
        (
            cd "$out"
            set -- --lighthouse "$(cat lh)" --replica "$r" --steps "$steps" --hidden "$h" $k
            PYTHONPATH="$build/python" TORCH_FT_DIR="$out" timeout 600 "$py" \
                "$src/bindings/python/bench/torch_ft.py" "$@" >"f$r" 2>&1 ||
                { [ -s killed ] && PYTHONPATH="$build/python" TORCH_FT_DIR="$out" timeout 600 \
                    "$py" "$src/bindings/python/bench/torch_ft.py" "$@" >>"f$r" 2>&1; }
        ) &
        pids="$pids $!"
    done
    rc=0
    for p in $pids; do wait "$p" || rc=1; done
    kill "$lh"
    wait "$lh" 2>/dev/null || :
    [ "$rc" = 0 ] || { tail -n 20 "$out"/f* >&2; return 1; }
}
ft() {
    ft_job || return 1
    v=$(sed -n 's/^time per step \([0-9.]*\) s$/\1/p' "$out/f0") && echo "torchft $v"
}
# gloo_wait PID...: the Gloo ranks' end; 1 (their outputs on stderr) when
# one failed before rank 0 printed its time.  A rank that fails after it (in
# torch.distributed's teardown: "terminate called without an active
# exception", seen at N = 4) costs the round nothing it measured: said, and
# the time stands.
gloo_wait() {
    _bad=0
    for _p in "$@"; do wait "$_p" || _bad=1; done
    [ "$_bad" = 0 ] && return 0
    if grep -q '^time per step ' "$out/g0"; then
        echo "bench/torch: a Gloo rank failed after rank 0's time (its teardown): $(cat "$out"/g* |
            grep -v '^time per step\|^weights' | tail -n 1)" >&2
        return 0
    fi
    cat "$out"/g* >&2
    return 1
}
gloo() {
    port=$((20000 + ($$ + $1) % 20000))
    pids=""
    for r in $(seq 0 $((n - 1))); do
        PYTHONPATH="$build/python" RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            timeout 600 "$py" "$src/bindings/python/bench/torch_gloo.py" --steps "$steps" \
            --hidden "$h" >"$out/g$r" 2>&1 &
        pids="$pids $!"
    done
    gloo_wait $pids || return 1
    v=$(sed -n 's/^time per step \([0-9.]*\) s$/\1/p' "$out/g0") && echo "gloo $v"
}
fts=""
"$py" -c 'import torchft' 2>"$out/ftwhy" && fts=ft
echo "torch MLP ($steps steps, batch 64 per rank, 1 thread per rank, $("$py" -c 'import torch; print("torch", torch.__version__)')): ms per step, median (min-max) of $rounds rounds interleaved lazy, eager, gloo${fts:+, torchft} and back"
[ -n "$fts" ] || echo "torchft: not importable by $py, left out: $(tail -n 1 "$out/ftwhy") (sh scripts/deps.sh installs it)"
printf '%6s %3s %11s %11s %8s %8s %19s %19s %19s  %s\n' hidden N "rally lazy" "rally eager" gloo \
    torchft "gloo/lazy (range)" "gloo/eager (range)" "torchft/lazy" "load, memcpy GB/s before -> after"
ms() { spread "$out/t" "$1" | awk '{ printf "%.3f", $2 * 1000 }'; }
x() { spread "$out/t" "$1" "$2" | awk '{ printf "%.2fx (%.2f-%.2f)", $2, $1, $3 }'; }
for h in ${BENCH_TORCH_HIDDEN:-64 512}; do
    for n in ${BENCH_TORCH_NS:-2 4}; do
        l0=$(load1)
        m0=$(memcpy_gbs "$build")
        interleave "$rounds" lazy eager gloo $fts >"$out/t"
        printf '%6d %3d %11s %11s %8s %8s %19s %19s %19s  %s, %s -> %s, %s\n' "$h" "$n" \
            "$(ms lazy)" "$(ms eager)" "$(ms gloo)" "$(ms torchft)" "$(x gloo lazy)" \
            "$(x gloo eager)" "$(x torchft lazy)" "$l0" "$m0" "$(load1)" "$(memcpy_gbs "$build")"
        summary_row "torch step: MLP hidden $h, N = $n, a checkpoint every step" \
            "$(ms lazy) ms" "Gloo DDP $(ms gloo) ms${fts:+, torchft $(ms torchft) ms}" \
            "$(x gloo lazy)" "eager checkpoint $(x gloo eager); memcpy $m0 GB/s, load $l0 -> $(load1)"
        target_row "torch step, a checkpoint every step, hidden $h, N = $n: Gloo DDP's time / rally's" \
            "$(x gloo lazy)" "$(spread "$out/t" gloo lazy | awk '{ print $2 }')" ">=" 1.0x
    done
done

# The same MLP in numpy (bindings/python/bench/numpy_mlp.py): rally.allreduce
# and a lazy checkpoint every step beside Gloo's all_reduce on the same
# array with no checkpoint, and rally with no checkpoint (what it costs)
np_rally() { # [ARGS] -> seconds per step
    PYTHONPATH="$build/python" timeout 600 "$build/rally-run" -n "$n" --startup-timeout-ms 600000 \
        "$py" "$src/bindings/python/bench/numpy_mlp.py" --steps "$steps" --hidden "$h" "$@" \
        >"$out/r" 2>&1 || { cat "$out/r" >&2; return 1; }
    sed -n 's/^\[0\] time per step \([0-9.]*\) s$/\1/p' "$out/r"
}
np_lazy() { v=$(np_rally) && echo "np_lazy $v"; }
np_bare() { v=$(np_rally --no-checkpoint) && echo "np_bare $v"; }
np_gloo() {
    port=$((20000 + ($$ + $1 + 7) % 20000))
    pids=""
    for r in $(seq 0 $((n - 1))); do
        RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 600 "$py" \
            "$src/bindings/python/bench/numpy_mlp.py" --gloo --steps "$steps" --hidden "$h" \
            >"$out/g$r" 2>&1 &
        pids="$pids $!"
    done
    gloo_wait $pids || return 1
    v=$(sed -n 's/^time per step \([0-9.]*\) s$/\1/p' "$out/g0") && echo "np_gloo $v"
}
echo
echo "numpy MLP (the same shapes; one allreduce of the gradients a step): ms per step, median (min-max) of $rounds rounds interleaved rally + lazy checkpoint, rally bare, gloo and back"
printf '%6s %3s %11s %11s %8s %19s  %s\n' hidden N "rally lazy" "rally bare" gloo "gloo/lazy (range)" \
    "load, memcpy GB/s before -> after"
for h in ${BENCH_TORCH_HIDDEN:-64 512}; do
    for n in ${BENCH_TORCH_NS:-2 4}; do
        l0=$(load1)
        m0=$(memcpy_gbs "$build")
        interleave "$rounds" np_lazy np_bare np_gloo >"$out/t"
        printf '%6d %3d %11s %11s %8s %19s  %s, %s -> %s, %s\n' "$h" "$n" "$(ms np_lazy)" \
            "$(ms np_bare)" "$(ms np_gloo)" "$(x np_gloo np_lazy)" "$l0" "$m0" "$(load1)" \
            "$(memcpy_gbs "$build")"
        summary_row "numpy step: MLP hidden $h, N = $n, a checkpoint every step" \
            "$(ms np_lazy) ms" "Gloo all_reduce $(ms np_gloo) ms" "$(x np_gloo np_lazy)" \
            "rally without the checkpoint $(ms np_bare) ms; memcpy $m0 GB/s, load $l0 -> $(load1)"
        target_row "numpy step, a checkpoint every step, hidden $h, N = $n: Gloo's time / rally's" \
            "$(x np_gloo np_lazy)" "$(spread "$out/t" np_gloo np_lazy | awk '{ print $2 }')" ">=" 1.0x
    done
done
[ -n "$fts" ] || exit 0
# back in step after a kill -9: rank 1 before step 50 of 100, hidden 64
steps=100
h=64
rally_back() {
    rm -f "$out/killed"
    TORCH_MLP_KILLED="$out/killed" rally_steps --kill 1:50 >/dev/null || return 1
    v=$(sed -n 's/^\[1\] back \([0-9.]*\) s$/\1/p' "$out/r") && echo "rally $v"
}
ft_back() {
    ft_job 50 || return 1
    v=$(sed -n 's/^back \([0-9.]*\) s$/\1/p' "$out/f1") && echo "torchft $v"
}
echo "kill -9 of rank 1 before step 50 (hidden 64): s from the kill to its first step done again, median (min-max) of $rounds rounds interleaved rally, torchft, torchft, rally"
printf '%3s %22s %22s  %s\n' N "rally.torch" "torchft" "load, memcpy GB/s before -> after"
for n in ${BENCH_TORCH_NS:-2 4}; do
    l0=$(load1)
    m0=$(memcpy_gbs "$build")
    abba "$rounds" rally_back ft_back >"$out/t"
    s3() { spread "$out/t" "$1" | awk '{ printf "%.2f (%.2f-%.2f)", $2, $1, $3 }'; }
    printf '%3d %22s %22s  %s, %s -> %s, %s\n' "$n" "$(s3 rally)" "$(s3 torchft)" "$l0" "$m0" \
        "$(load1)" "$(memcpy_gbs "$build")"
    summary_row "torch: kill -9 to the restarted rank's first step, MLP hidden 64, N = $n" \
        "$(s3 rally) s" "torchft $(s3 torchft) s" \
        "$(spread "$out/t" torchft rally | awk '{ printf "%.2fx (%.2f-%.2f)", $2, $1, $3 }')" \
        "memcpy $m0 GB/s, load $l0 -> $(load1)"
done
