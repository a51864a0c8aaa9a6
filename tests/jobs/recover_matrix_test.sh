#!/bin/sh
# recover_matrix_test.sh RALLY_RUN PLAIN MOCK N MODELS SNAPSHOTS [args]...
#   MODELS: global | local      (local: every rank also keeps a local model)
#   SNAPSHOTS: off | on         (on: --snapshot-dir, a snapshot every 3 versions)
#
# Every kill phase of the recover job against one failure-free run: rank 1
# dies at every call of version 2 (no snapshot turn) and of version 3 (the
# snapshot of version 3 reports inside the checkpoint that ends it), inside
# the checkpoint, while a recovery serves it, and inside load_checkpoint.
# Each run must succeed with the failure-free digest and exactly the deaths
# it asked for, so no pair of a phase and a feature (a local model served
# with a snapshot's report, say) can hide a failure.  Extra args go to
# every run (rally_verify_every=1, say).
# Each job is bounded by run_job.sh (30 s, about 50 times a healthy one),
# which also checks for leftovers; the first failure ends the test.
set -u
run=$1 plain=$2 mock=$3 n=$4 models=$5 snaps=$6
shift 6
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args="2000 6"
[ "$models" = local ] && args="$args local"
# seq 0 max, 1-4 broadcasts, 5 sum, 6 allgatherv, 7 the checkpoint (N = 4 or
# 8).  With local models the replication is an operation of its own at 7,
# so a snapshot's report, the next, is at 8; without, the report is at 7
# too, behind the checkpoint's own point.
last=7
snap_at=""
[ "$snaps" = on ] && [ "$models" = local ] && snap_at=8

job() { # job NAME DEATHS [args]...: runs, checks digest and deaths
    name=$1 want=$2
    shift 2
    dir="$tmp/snap-$name"
    opts=""
    [ "$snaps" = on ] && opts="--snapshot-dir $dir --snapshot-every 3 --job m"
    # shellcheck disable=SC2086 # the argument lists split on purpose
    "$here/../rigs/run_job.sh" 0 30 "$run" -n "$n" --max-restarts 4 $opts "$@" >"$tmp/out" 2>&1 || {
        cat "$tmp/out"; echo "recover_matrix: $name: the job failed"; return 1; }
    d=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/out")
    got=$(sed -n 's/.*summary: deaths=\([0-9]*\).*/\1/p' "$tmp/out")
    if [ "$d" != "$d0" ] || [ "$got" != "$want" ]; then
        cat "$tmp/out"
        echo "recover_matrix: $name: digest '$d' deaths '$got', want '$d0' and $want"
        return 1
    fi
    echo "recover_matrix: $name: $d, $got deaths"
}

# shellcheck disable=SC2086
"$here/../rigs/run_job.sh" 0 30 "$run" -n "$n" "$plain" $args "$@" >"$tmp/plain" 2>&1 || {
    cat "$tmp/plain"; echo "recover_matrix: the failure-free run failed"; exit 1; }
d0=$(grep -o 'model_digest=[0-9a-f]*' "$tmp/plain")
[ -n "$d0" ] || { cat "$tmp/plain"; echo "recover_matrix: no digest"; exit 1; }

for v in 2 3; do
    s=0
    while [ "$s" -le "$last" ]; do
        # shellcheck disable=SC2086
        job "op_v${v}_s$s" 1 "$mock" $args "$@" rally_mock=1,$v,$s,0 || exit 1
        s=$((s + 1))
    done
done
if [ -n "$snap_at" ]; then
    # shellcheck disable=SC2086
    job "op_v3_s${snap_at}_report" 1 "$mock" $args "$@" rally_mock=1,3,$snap_at,0 || exit 1
fi
for v in 2 3; do
    # shellcheck disable=SC2086
    job "checkpoint_v$v" 1 "$mock" $args "$@" rally_mock=1,$v,7,0,checkpoint || exit 1
done
# shellcheck disable=SC2086
job recovery 2 "$mock" $args "$@" rally_mock=2,3,5,0,op,g rally_mock=1,3,5,0,recovery,g || exit 1
# shellcheck disable=SC2086
job load 2 "$mock" $args "$@" rally_mock=2,3,5,0 rally_mock=2,0,0,1,load || exit 1
echo "recover_matrix: passed ($d0)"
