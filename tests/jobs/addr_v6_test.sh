#!/bin/sh
# addr_v6_test.sh RALLY_RUN DEMO — a 4-rank job over IPv6 loopback (tracker
# --bind ::1, peer links over TCP on ::1) sums to the same digest as the
# same job over 127.0.0.1.
set -u
run=$1 demo=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "addr_v6_test: $*"; exit 1; }
# digest_over HOST: the job's digest into $tmp/digest.HOST (empty: none)
digest_over() {
    RALLY_TRANSPORT=tcp "$here/../rigs/run_job.sh" 0 60 "$run" --bind "$1" -n 4 "$demo" 20000 \
        >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "the job over $1 failed"; }
    sed -n 's/.*digest \([0-9a-f]\{16\}\)$/\1/p' "$tmp/out" >"$tmp/digest.$1"
}
digest_over 127.0.0.1
digest_over ::1
v4=$(cat "$tmp/digest.127.0.0.1") v6=$(cat "$tmp/digest.::1")
echo "127.0.0.1: $v4"
echo "::1:       $v6"
[ "${#v4}" -eq 16 ] || fail "no digest over 127.0.0.1"
[ "$v4" = "$v6" ] || fail "the digests differ"
echo "addr_v6_test: passed"
