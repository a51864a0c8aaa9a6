#!/bin/sh
# hostloss_test.sh CASE BUILD_DIR — a whole host lost at once, on one
# machine: rally_host_group=4 makes ranks 4h..4h+3 one host (as the
# address book's hosts would on a cluster), and a rally_mock group kills
# every rank of host 1 at the same point (they die together, none restarted
# before all are dead).  The copies go round the placement ring (docs/
# recovery.md, "Failure domains"), so each lives on other hosts too; in
# rank order every one of these losses took the last copy.
#   local        12 ranks (3 hosts x 4), records as local models
#                (tests/progs/records.c), the default rally_local_replica=2:
#                host 1 dies on entry to a collective; its ranks restart and
#                take their models back from hosts 0 and 2; the digest of
#                the run without failures
#   local_k1     the same with rally_local_replica=1 (each model on 2 hosts)
#   checkpoint   host 1 dies inside rally_checkpoint, after storing the new
#                version and before the others know
#   opaque       opaque local models (tests/progs/recover.c local), 12 ranks
#   elastic      --min-workers 8, no restarts: the job gives host 1 up and
#                ends with 8 workers, the records moved to their new owners,
#                the same digest
#   piece        8 ranks (2 hosts x 4), the ring (rally_hier=off): a result
#                kept in pieces (rally_result_copies=2) loses host 1 right
#                after it is cached; the pieces come from host 0
#   piece_hier   the same with the hierarchy, which keeps big results whole
#   piece_late   piece, with rank 0 still inside the big sum (rally_mock's cut
#                point: its result is whole in its buffer, and it waits for
#                the next RESET) when host 1, which finished it, dies
#                entering the next call: pieces 0 and 1 were kept by rank 0
#                (not yet) and by ranks 4 and 7 (dead); rank 0 serves them
#                from its own buffer, and the digest is the failure-free one
#   moved        6 ranks on one machine (in a network namespace of the
#                test's own: root); rank 2 dies and its restart listens on
#                198.18.0.1 (rally_interface): the address book now has two
#                hosts, so this epoch's placement ring differs from the one
#                the survivors' copies were placed on; they are found by the
#                owners their sets name, and the job ends with the digest
#   admm         rally-linear --solver admm (each rank's (x_i, u_i) a local
#                model), 8 ranks (2 hosts x 4): host 1 dies entering
#                iteration 4; the same model as without the loss
#   lda          rally-lda (each rank's topic assignments a local model),
#                8 ranks: host 1 dies entering version 3; the same model
#   snapshot     local, with snapshots every 2 versions: the job recovers in
#                place and commits snapshots after the loss
#   xor_local, xor_checkpoint, xor_opaque, xor_snapshot
#                local, checkpoint, opaque and snapshot with
#                rally_local_scheme=xor (one parity chunk per rank, sets of
#                one rank per host: 3 here): each rank of host 1 has its
#                model rebuilt from its set's survivors, and says so
#   xor_set4     rally_xor_set=4 at 3 hosts: set 1 (places 4-7: ranks 5, 9,
#                2, 6) holds two ranks of host 1, so the loss is beyond the
#                scheme: the clear error naming the set, a loss (exit 3)
#   xor_elastic  rally_local_scheme=xor with --min-workers: refused at the
#                start with its sentence
#   xor_piece    piece at 12 ranks (3 hosts x 4) with rally_result_scheme=xor:
#                each rank keeps its own piece and one parity chunk of its
#                set's (sets of 3, one rank a host); host 1 lost after a
#                big result is cached (seq 0's MAX, before the version's
#                sum): each restarted rank rebuilds host
#                1's 4 pieces (one a set) from their sets, says so, and the
#                digest is the run's without the loss
#   xor_piece_set4  the same with rally_xor_set=4: set 1 (ranks 5, 9, 2, 6)
#                loses two pieces with host 1, the loss error naming the set
# Every job is bounded (run_job.sh) and leaves no process behind.
set -u
case_=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
run=$build/rally-run rec=$build/tests/records_mock
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "hostloss_test $case_: $*"; [ -f "$tmp/out" ] && tail -60 "$tmp/out"; exit 1; }
has() { grep -q -- "$2" "$1" || { cp "$1" "$tmp/out"; fail "no line '$2'"; }; }
rdig() { sed -n 's/.*records: result digest=\([0-9a-f]*\) ids=1000$/\1/p' "$1"; }
mdig() { grep -o 'model_digest=[0-9a-f]*' "$1"; }

# one out expect args...: one job through run_job.sh
one() {
    o=$1 want=$2
    shift 2
    "$here/../rigs/run_job.sh" "$want" 180 "$run" "$@" >"$o" 2>&1 || { cp "$o" "$tmp/out"; fail "job: $*"; }
}

# host1 V S [PHASE]: kill points for every rank of host 1 (ranks 4-7), one group
host1() {
    for r in 4 5 6 7; do printf ' rally_mock=%s,%s,%s,0,%s,host1' "$r" "$1" "$2" "${3:-op}"; done
}

# same_digest plain a dig: the digests agree and are there
same_digest() {
    [ -n "$($3 "$1")" ] && [ "$($3 "$2")" = "$($3 "$1")" ] ||
        { cp "$2" "$tmp/out"; fail "digest $($3 "$2"), without the loss $($3 "$1")"; }
}

# died_together out: the four ranks of host 1 died and were restarted
died_together() {
    for r in 4 5 6 7; do
        has "$1" "^rally-run: rank $r .*restart"
    done
}

# rebuilt out: each rank of host 1 had its local model rebuilt from parity
rebuilt() {
    for r in 4 5 6 7; do
        has "$1" "^\[$r\] rally: rank $r: local model of checkpoint version [0-9]* ([0-9]* bytes) rebuilt from the parity of set [0-3] "
    done
}

hg=rally_host_group=4
xor=
case $case_ in xor_*) xor=rally_local_scheme=xor ;; esac
case $case_ in
local | local_k1 | checkpoint | snapshot | xor_local | xor_checkpoint | xor_snapshot)
    k=$xor
    [ "$case_" = local_k1 ] && k=rally_local_replica=1
    at="5 0 op"
    case $case_ in *checkpoint) at="5 1 checkpoint" ;; esac # one allreduce, then the checkpoint
    snap=
    case $case_ in *snapshot) snap="--snapshot-dir $tmp/s --snapshot-every 2" ;; esac
    one "$tmp/plain" 0 -n 12 "$rec" 1000 12 $hg $k
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 12 $snap "$rec" 1000 12 $hg $k $(host1 $at)
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" rdig
    case $case_ in *snapshot)
        has "$tmp/a" "snapshot: committed .*/snap-00000012 (checkpoint version 12)$" ;;
    esac
    [ -z "$xor" ] || rebuilt "$tmp/a"
    ;;
opaque | xor_opaque)
    one "$tmp/plain" 0 -n 12 "$build/tests/recover" 2000 8 local $hg $xor
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 12 "$build/tests/recover_mock" 2000 8 local $hg $xor $(host1 3 2)
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" mdig
    [ -z "$xor" ] || rebuilt "$tmp/a"
    ;;
xor_set4)
    # shellcheck disable=SC2046
    one "$tmp/a" 3 -n 12 "$rec" 1000 12 $hg $xor rally_xor_set=4 $(host1 5 0)
    has "$tmp/a" "cannot recover: set 1 (ranks 5, 9, 2, 6) lost ranks 5 and 6; rally_local_scheme=xor covers one per set"
    ;;
xor_elastic)
    one "$tmp/a" nonzero -n 12 --min-workers 8 "$rec" 1000 12 $hg $xor
    has "$tmp/a" "rally_local_scheme=xor does not cover elastic jobs"
    ;;
elastic)
    one "$tmp/plain" 0 -n 12 "$rec" 1000 12 $hg
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 12 --min-workers 8 --max-restarts 0 "$rec" 1000 12 $hg $(host1 5 0)
    has "$tmp/a" "going on with 8 workers"
    same_digest "$tmp/plain" "$tmp/a" rdig
    ;;
piece_late)
    # the ring 0 4 1 5 2 6 3 7: place i keeps pieces i, i + 1
    set -- 131072 5 rally_hd_threshold_bytes=0 $hg rally_hier=off
    one "$tmp/plain" 0 -n 8 "$build/tests/recover" "$@"
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 8 "$build/tests/recover_mock" "$@" rally_mock=0,3,5,0,cut $(host1 3 6)
    has "$tmp/a" "rally mock: rank 0 waits for a RESET inside the allreduce at seq 5 of version 3"
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" mdig
    ;;
piece | piece_hier)
    h=rally_hier=off
    [ "$case_" = piece_hier ] && h=rally_hier=auto
    one "$tmp/plain" 0 -n 8 "$build/tests/recover" 131072 5 rally_hd_threshold_bytes=0 $hg $h
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 8 "$build/tests/recover_mock" 131072 5 rally_hd_threshold_bytes=0 $hg $h \
        $(host1 3 5)
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" mdig
    ;;
xor_piece)
    set -- "$build/tests/recover" 131072 5 rally_hd_threshold_bytes=0 $hg rally_hier=off \
        rally_result_scheme=xor
    one "$tmp/plain" 0 -n 12 "$@"
    shift
    # shellcheck disable=SC2046
    # on entry to the big sum (seq 4), after three broadcasts: every survivor
    # finished seq 0's MAX (kept in part) before, so the losses are host 1's
    # alone (a worker still inside a call when the host dies would count as
    # one more lost in its set)
    one "$tmp/a" 0 -n 12 "$build/tests/recover_mock" "$@" $(host1 3 4)
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" mdig
    # the ring 0 4 8 1 5 9 2 6 10 3 7 11: host 1 kept pieces 1, 4, 7 and 10,
    # one in each set of 3 (set s: ranks s, s + 4, s + 8)
    for r in 4 5 6 7; do
        for s in 0 1 2 3; do
            has "$tmp/a" "^\[$r\] rally: rank $r: piece $((3 * s + 1)) of 12 of the result of version 3, seq 0 ([0-9]* bytes) rebuilt from the parity of set $s (ranks $s, $((s + 4)), $((s + 8)))$"
        done
    done
    ;;
xor_piece_set4)
    # shellcheck disable=SC2046
    one "$tmp/a" 3 -n 12 "$build/tests/recover_mock" 131072 5 rally_hd_threshold_bytes=0 $hg \
        rally_hier=off rally_result_scheme=xor rally_xor_set=4 $(host1 3 4)
    has "$tmp/a" "cannot recover: the result of version 3, seq 0 is lost in part: set 1 (ranks 5, 9, 2, 6) lost ranks 5 and 6; rally_result_scheme=xor covers one per set"
    ;;
moved)
    # the wrapper: rank 2's second start listens on another loopback address
    cat >"$tmp/wrap.sh" <<EOF
#!/bin/sh
if [ "\$RALLY_TASK_ID" = 2 ]; then
    [ -e "$tmp/started" ] && export RALLY_INTERFACE=198.18.0.1
    : >"$tmp/started"
fi
exec "\$@"
EOF
    chmod +x "$tmp/wrap.sh"
    one "$tmp/plain" 0 -n 6 "$rec" 1000 12
    # a network namespace of the test's own, with a second address
    # (198.18.0.1 on one end of a veth pair, no route out) beside loopback
    unshare -n sh -c 'ip link set lo up && ip link add v0 type veth peer name v1 &&
        ip addr add 198.18.0.1/24 dev v0 && ip link set v0 up && ip link set v1 up &&
        exec "$@"' sh \
        "$here/../rigs/run_job.sh" 0 180 "$run" -n 6 "$tmp/wrap.sh" "$rec" 1000 12 rally_mock=2,5,0,0 \
        >"$tmp/a" 2>&1 || { cp "$tmp/a" "$tmp/out"; fail "the job with rank 2 moved failed"; }
    has "$tmp/a" "^rally-run: rank 2 died"
    same_digest "$tmp/plain" "$tmp/a" rdig
    ;;
admm)
    /usr/bin/python3 "$here/../rigs/linear_sklearn.py" gen-dense "$tmp/d" 8000 10 3 || fail "no data"
    set -- --data "$tmp/d.train.csv" --data-opt csv_label=0 --lambda 1e-3 --solver admm $hg
    one "$tmp/plain" 0 -n 8 "$build/rally-linear" "$@"
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 8 "$build/rally-linear-mock" "$@" $(host1 4 0)
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" mdig
    ;;
lda)
    "$build/rally-datagen" --docs 800 --vocab 200 --topics 6 --doc-words 30 --seed 5 \
        -o "$tmp/d.svm" >/dev/null 2>&1 || fail "rally-datagen failed"
    set -- --data "$tmp/d.svm" --topics 6 --iters 8 --quiet $hg
    one "$tmp/plain" 0 -n 8 "$build/rally-lda" "$@"
    # shellcheck disable=SC2046
    one "$tmp/a" 0 -n 8 "$build/rally-lda-mock" "$@" $(host1 3 0)
    died_together "$tmp/a"
    same_digest "$tmp/plain" "$tmp/a" mdig
    ;;
*)
    fail "no case $case_"
    ;;
esac
exit 0
