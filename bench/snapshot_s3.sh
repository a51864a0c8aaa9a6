#!/bin/sh
# bench/snapshot_s3.sh BUILD_DIR — what the object-store tier of snapshots
# costs (make bench; issue 20 item 8) beside what the same bytes cost
# without rally, in one run on this machine:
#   1. a snapshot of a MIB-MiB global model (random bytes, snapshot_mk
#      --global) on a real Swift with the S3 API (tests/rigs/swift_rig.sh on
#      127.0.0.1, its objects on the build directory's disk): rally-snapshot
#      cp from a directory to s3://bench/round-N (the part, the manifest, then
#      the copy read back and verified) and the writer alone (snapshot_bench
#      --write s3://...: one PUT and its checks, timed in the process), beside
#      curl -T of the snapshot's global.bin; the read apart: rally-snapshot
#      verify of the copy beside curl's GET of the same object
#   2. the directory tier as bench/snapshot.sh measures it (bench/lib.sh):
#      the writer alone beside dd bs=1M conv=fsync, into the same disk
#   3. per request: rally-snapshot ls of a job of 4 snapshots (world 2, local
#      models) and verify of a 64-byte one, with the requests each sent (the
#      proxy's log), beside one signed curl GET
# Each pair runs A B B A A B B A (ROUNDS each); the table gives min, median
# and max over the rounds, for a ratio those of the rounds' own ratios.  A
# time is the command's wall time (process start included, for rally and
# curl alike), the writer's excepted.  The rig starts before the timings and
# stops after them; a trap stops it and removes every file; timeout bounds
# the whole (LIMIT s).   BENCH_MIB=100 BENCH_S3_ROUNDS=4 BENCH_S3_LIMIT=600
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ -z "${BENCH_S3_INNER:-}" ] &&
    BENCH_S3_INNER=1 exec timeout -k 20 "${BENCH_S3_LIMIT:-600}" sh "$0" "$@"
build=$(cd "$1" && pwd)
mib=${BENCH_MIB:-100} rounds=${BENCH_S3_ROUNDS:-4}
. "$here/lib.sh"
tool=$build/rally-snapshot mk=$build/snapshot_mk prog=$build/snapshot_bench
for p in "$tool" "$mk" "$prog"; do
    [ -x "$p" ] || { echo "bench/snapshot_s3.sh: build first ($p)" >&2; exit 1; }
done
rig_scratch "$build" snaps3bench # bench/lib.sh: $tmp and $rig, cleaned up on exit
export BENCH_LOG="$tmp/out"
res=$tmp/results
run=0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0 started=2026-11-30T12:00:00.000000Z

rig_start "$rig" || exit 1 # bench/lib.sh: the rig, its variables, the bucket
url=$AWS_ENDPOINT_URL/bench
# what is copied: the big one, the tiny one, a job of 4 (world 2, locals)
head -c $((mib * 1048576)) /dev/urandom >"$tmp/model.bin"
snap=$("$mk" "$tmp/src" big $run $started 1 1 --global "$tmp/model.bin")
tiny=$("$mk" "$tmp/src" tiny $run $started 1 1)
for v in 1 2 3 4; do
    "$tool" cp "$("$mk" "$tmp/src" four $run $started $v 2 --locals)" s3://bench/ls >"$BENCH_LOG"
done
"$tool" cp "$tiny" s3://bench/ls >"$BENCH_LOG"
gbin=$snap/global.bin
mibs() { awk -v m="$mib" -v s="$1" 'BEGIN { printf "%.3f\n", m / s }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f\n", s * 1000 }'; }
nreq() { # client requests the proxy logged so far (its sub-requests say "- -")
    sleep 0.2
    grep -c '^proxy-server: 127\.0\.0\.1 127\.0\.0\.1 ' "$rig/proxy.log" || :
}

# 1. the object store: rally (cp, verify, the writer alone) | curl (PUT, GET)
s3_rally() {
    t=$(secs "$tool" cp "$snap" "s3://bench/round-$1")
    echo "cp $(mibs "$t")"
    t=$(secs "$tool" verify "s3://bench/round-$1/big/snap-00000001")
    echo "verify $(mibs "$t")"
    t=$(writer_ms "$prog" s3://bench/w "$mib" "$1")
    echo "writer $(mibs "$(echo "$t" | awk '{ print $1 / 1000 }')")"
    "$tool" rm "s3://bench/round-$1/big/snap-00000001" >"$BENCH_LOG"
    s3curl -X DELETE "$url/w/w/snap-$(printf %08d "$1")/global.bin"
}
s3_curl() {
    t=$(secs s3curl -o /dev/null -T "$gbin" "$url/curl-$1/global.bin")
    echo "put $(mibs "$t")"
    u=$(secs s3curl -o /dev/null "$url/curl-$1/global.bin")
    echo "get $(mibs "$u")"
    echo "putget $(mibs "$(echo "$t $u" | awk '{ print $1 + $2 }')")"
    s3curl -X DELETE "$url/curl-$1/global.bin"
}
# 2. the directory: the writer alone | dd conv=fsync (bench/snapshot.sh's)
dir_writer() {
    t=$(writer_ms "$prog" "$tmp/d" "$mib" "$1")
    echo "dwriter $(mibs "$(echo "$t" | awk '{ print $1 / 1000 }')")"
    rm -rf "$tmp/d"
}
dir_dd() {
    echo "dd $(mibs "$(dd_fsync_s "$tmp/dd.bin" "$mib")")"
    rm -f "$tmp/dd.bin"
}
# 3. per request: rally-snapshot ls and verify | one curl GET
req_rally() {
    n0=$(nreq)
    t=$(secs "$tool" ls s3://bench/ls/four)
    n1=$(nreq)
    u=$(secs "$tool" verify s3://bench/ls/tiny/snap-00000001)
    n2=$(nreq)
    echo "ls $(ms "$t")"
    echo "tiny $(ms "$u")"
    echo "ls_n $((n1 - n0))"
    echo "tiny_n $((n2 - n1))"
}
req_curl() {
    t=$(secs s3curl -o /dev/null "$url/ls/tiny/snap-00000001/MANIFEST.json")
    echo "get1 $(ms "$t")"
}

echo "bench/snapshot_s3.sh: $mib MiB, $rounds rounds a pair ..." >&2
: >"$res"
abba "$rounds" s3_rally s3_curl >>"$res"
abba "$rounds" dir_writer dir_dd >>"$res"
abba "$rounds" req_rally req_curl >>"$res"

fs=$(df -PT "$tmp" | awk 'NR == 2 { print $2 " (" $1 ")" }')
[ -f "$rig/srv.tmpfs" ] && fs="tmpfs (no user xattrs on $fs)"
echo "snapshot tiers benchmark: a $mib MiB global model, $rounds rounds a pair, A B B A"
echo "  Swift $(dpkg-query -W -f='${Version}' python3-swift 2>/dev/null) (s3api, tempauth, one proxy process) on 127.0.0.1;" \
    "objects and directory on $fs; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf "  %-54s %9s %9s %9s\n" "what" min median max
echo "  object store (S3 API)"
row "rally-snapshot cp DIR -> s3 (write, read back, verify)" MiB/s "$res" cp
row "snapshot writer alone -> s3 (one PUT and its checks)" MiB/s "$res" writer
row "curl -T of the same global.bin, the same Swift" MiB/s "$res" put
row "curl -T, then GET (cp's write and read, by curl)" MiB/s "$res" putget
row "  rally-snapshot cp / curl -T" x "$res" cp put
row "  rally-snapshot cp / curl -T, then GET" x "$res" cp putget
row "  writer alone / curl -T" x "$res" writer put
row "rally-snapshot verify s3://... (reads it all)" MiB/s "$res" verify
row "curl GET -o /dev/null of the same object" MiB/s "$res" get
row "  rally-snapshot verify / curl GET" x "$res" verify get
echo "  directory (as bench/snapshot.sh)"
row "snapshot writer alone -> DIR (durable write)" MiB/s "$res" dwriter
row "dd bs=1M conv=fsync, same directory" MiB/s "$res" dd
row "  writer alone / dd" x "$res" dwriter dd
row "  writer alone: s3 / DIR" x "$res" writer dwriter
echo "  per request"
row "rally-snapshot ls, a job of 4 snapshots" ms "$res" ls
row "  requests it sent" n "$res" ls_n
row "rally-snapshot verify, a 64-byte snapshot" ms "$res" tiny
row "  requests it sent" n "$res" tiny_n
row "curl, one signed GET (its manifest)" ms "$res" get1
