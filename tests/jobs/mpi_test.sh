#!/bin/sh
# mpi_test.sh CASE BUILD_DIR — the same jobs on rally's engine (rally-run)
# and on librally_mpi (mpirun), compared where the reduction order allows.
#   recover  tests/progs/recover.c (bootstrap collectives, broadcasts, an
#            order-sensitive double sum through a prepare callback,
#            allgatherv, checkpoints) with a global model, with local
#            models, and with lazy checkpoints: at N = 2 the digests and the
#            final versions are equal, since a sum of two operands is one
#            addition in either order; at N = 4 (MPI's order) each mode runs
#            on librally_mpi and checks what recover.c checks exactly
#   kmeans   examples/kmeans (rally-kmeans beside rally-kmeans-mpi, the same
#            sources): equal digests at N = 1 and 2; at N = 4 MPI adds the
#            partial sums in its own order, so the objectives must agree to
#            1e-9 relative and the digests are printed, not compared
# Every job is bounded in time and must leave no process behind.
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "mpi_test $case_: $*"; [ -f "$tmp/out" ] && tail -30 "$tmp/out"; exit 1; }
digest() { grep -o 'model_digest=[0-9a-f]*' "$1"; }
# both NAME N RALLY_PROG MPI_PROG ARGS...: one job on each backend
both() {
    name=$1 n=$2 prog=$3 mprog=$4
    shift 4
    "$here/../rigs/run_job.sh" 0 120 "$run" -n "$n" "$prog" "$@" >"$tmp/$name.rally" 2>&1 ||
        { cp "$tmp/$name.rally" "$tmp/out"; fail "rally-run job failed: $*"; }
    "$here/../rigs/mpi_job.sh" 0 120 "$n" "$mprog" "$@" >"$tmp/$name.mpi" 2>&1 ||
        { cp "$tmp/$name.mpi" "$tmp/out"; fail "mpirun job failed: $*"; }
    a=$(digest "$tmp/$name.rally") b=$(digest "$tmp/$name.mpi")
    [ -n "$a" ] && [ -n "$b" ] || fail "$name: no digest (rally '$a', mpi '$b')"
}

case $case_ in
recover)
    for mode in plain local lazy; do
        opt=$mode
        [ "$mode" = plain ] && opt=""
        both "$mode" 2 "$build/tests/recover" "$build/tests/recover_mpi" 2000 4 $opt
        v1=$(grep -o 'version=[0-9]*' "$tmp/$mode.rally") v2=$(grep -o 'version=[0-9]*' "$tmp/$mode.mpi")
        echo "N=2 $mode: rally $a $v1, mpi $b $v2"
        [ "$a" = "$b" ] || fail "$mode: digests differ at N=2"
        [ "$v1" = "$v2" ] || fail "$mode: checkpoint versions differ"
        "$here/../rigs/mpi_job.sh" 0 120 4 "$build/tests/recover_mpi" 2000 4 $opt >"$tmp/out" 2>&1 ||
            fail "$mode: the N=4 job on librally_mpi failed"
        echo "N=4 $mode: mpi $(digest "$tmp/out") $(grep -o 'version=[0-9]*' "$tmp/out")"
    done
    ;;
kmeans)
    data=$tmp/d.csv
    "$build/rally-datagen" --rows 20000 --features 8 --centers 6 --spread 2 --seed 7 \
        --format csv -o "$data" >/dev/null 2>&1 || fail "rally-datagen failed"
    for n in 1 2 4; do
        both "n$n" "$n" "$build/rally-kmeans" "$build/rally-kmeans-mpi" --data "$data" \
            --data-opt csv_label=0 -k 6
        o1=$(sed -n 's/.*result: .*objective=\([^ ]*\)$/\1/p' "$tmp/n$n.rally")
        o2=$(sed -n 's/.*result: .*objective=\([^ ]*\)$/\1/p' "$tmp/n$n.mpi")
        echo "N=$n: rally $a objective=$o1, mpi $b objective=$o2"
        if [ "$n" -le 2 ]; then
            [ "$a" = "$b" ] || fail "digests differ at N=$n"
        else
            python3 -c 'import sys
a, b = float(sys.argv[1]), float(sys.argv[2])
sys.exit(0 if abs(a - b) <= 1e-9 * abs(a) else 1)' "$o1" "$o2" || fail "objectives differ at N=$n"
            [ "$a" = "$b" ] && echo "N=$n: the digests happen to be equal" ||
                echo "N=$n: the digests differ (MPI's summation order), the objectives agree"
        fi
    done
    ;;
*) fail "unknown case" ;;
esac
echo "mpi_test $case_: passed"
