#!/bin/sh
# addr_netns_test.sh CASE RALLY_RUN ADDR_HOLD [RALLY_TRACKER] — a multi-homed host, in a
# network namespace this test creates: interface m0 (198.18.1.1/24,
# fd00:1::1/64) carries the tracker, interface d0 (198.18.2.1/24,
# fd00:2::1/64) is the data network (each a veth pair, no route out).  While
# the job is held wired (tests/progs/addr_hold.c), ss lists its connections:
#   v4        tracker --bind m0, workers rally_interface=d0: every peer link
#             has both ends on 198.18.2.1, the tracker lines on 198.18.1.1
#   default   no rally_interface: the peer links use the address the
#             workers reach the tracker by (198.18.1.1)
#   v6        tracker --bind [fd00:1::1], rally_interface=fd00:2::1: the peer
#             links are on [fd00:2::1]
#   linklocal tracker --bind [fe80::1%m0] (link-local, with its scope), no
#             rally_interface: a link-local address means nothing on another
#             host, so the peer links use m0's unique-local [fd00:1::1]
#   tracker   rally-tracker --bind d0 prints d0's address, --bind
#             [fd00:2::1] prints it bracketed, --bind nosuch0 fails; bound to
#             every address it prints an address other hosts can reach (not
#             loopback, nor a name that resolves to loopback)
#   wrong     rally_interface=nosuch0, =198.18.9.9 (not this host's), =d0
#             while d0 is down: the job fails at once, the error says why
# Needs root and ip netns: without them it fails (it never skips).
set -u
case=$1 run=$2 hold=$3 tracker=${4:-}
ns="rally-addr-$$"
tmp=$(mktemp -d)
job=""
cleanup() {
    [ -n "$job" ] && kill -9 "$job" 2>/dev/null
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "addr_netns_test $case: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }
in_ns() { ip netns exec "$ns" "$@"; }

[ "$(id -u)" -eq 0 ] || fail "needs root (network namespaces)"
ip netns add "$ns" || fail "cannot create network namespace $ns (ip netns)"
in_ns ip link set lo up || fail "cannot bring up lo in $ns"
for p in m d; do
    in_ns ip link add ${p}0 type veth peer name ${p}1 || fail "cannot create veth ${p}0"
    in_ns ip link set ${p}0 up && in_ns ip link set ${p}1 up || fail "cannot bring up ${p}0"
done
in_ns ip addr add 198.18.1.1/24 dev m0 &&
    in_ns ip addr add 198.18.2.1/24 dev d0 &&
    in_ns ip -6 addr add fd00:1::1/64 dev m0 nodad &&
    in_ns ip -6 addr add fd00:2::1/64 dev d0 nodad &&
    in_ns ip -6 addr add fe80::1/64 dev m0 nodad || fail "cannot address the interfaces"

# held JOB_ARGS...: starts a 4-rank held job in the namespace ($job), waits
# until every rank is wired and has summed once
held() {
    rm -f "$tmp"/ready.* "$tmp/go"
    in_ns env RALLY_TRANSPORT=tcp timeout -k 5 60 "$run" -n 4 "$@" "$hold" "$tmp" 1000 \
        >"$tmp/out" 2>&1 &
    job=$!
    i=0
    while [ "$(ls "$tmp" | grep -c '^ready\.')" -lt 4 ]; do
        kill -0 "$job" 2>/dev/null || fail "the job ended before every rank was ready"
        i=$((i + 1)); [ "$i" -gt 600 ] && fail "the ranks were not ready within 30 s"
        sleep 0.05
    done
}
# release: lets the held job finish and checks it succeeded
release() {
    touch "$tmp/go"
    wait "$job"
    rc=$?
    job=""
    [ "$rc" -eq 0 ] || fail "the job exited $rc"
    grep -q "addr_hold: digest" "$tmp/out" || fail "no digest"
}
# links TRACKER_ADDR: the established connections as "local peer", without
# the tracker's (either end on TRACKER_ADDR's port), into $tmp/links
links() {
    in_ns ss -tnH state established | awk '{print $(NF-1), $NF}' >"$tmp/all"
    tport=${1##*:}
    grep -v -e ":$tport " -e ":$tport\$" "$tmp/all" >"$tmp/links"
    grep -e ":$tport " -e ":$tport\$" "$tmp/all" >"$tmp/tracker"
    cat "$tmp/all"
}
# printed BIND...: what rally-tracker -n 1 --bind BIND prints as RALLY_TRACKER
printed() {
    rm -f "$tmp/t.out"
    in_ns timeout -k 5 30 "$tracker" -n 1 "$@" --secret-file "$tmp/secret" >"$tmp/t.out" \
        2>"$tmp/t.err" &
    tp=$!
    i=0
    until grep -q '^RALLY_TRACKER=' "$tmp/t.out" 2>/dev/null; do
        kill -0 "$tp" 2>/dev/null || break
        i=$((i + 1)); [ "$i" -gt 200 ] && break
        sleep 0.05
    done
    kill "$tp" 2>/dev/null
    wait "$tp" 2>/dev/null
    sed -n 's/^RALLY_TRACKER=//p' "$tmp/t.out"
}
tracker_of() { tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^RALLY_TRACKER=//p'; }
# check_on ADDR: every peer link has both ends on ADDR ("198.18.2.1",
# "[fd00:2::1]"), and there are at least the tree's 3 links (both ends: 6)
check_on() {
    t=""
    for w in $(pgrep -f "$tmp"); do
        t=$(tracker_of "$w")
        [ -n "$t" ] && break
    done
    [ -n "$t" ] || fail "no worker with RALLY_TRACKER found"
    links "$t"
    [ "$(wc -l <"$tmp/tracker")" -ge 8 ] || fail "fewer than 4 tracker lines to $t (both ends)"
    th=$(echo "${t%:*}" | sed 's/%[^]]*//') # ss writes a zone after the brackets
    bad=$(awk -v a="$th" '{ gsub(/%[a-z0-9]+/, "") }
        index($1, a ":") != 1 || index($2, a ":") != 1' "$tmp/tracker")
    [ -z "$bad" ] || fail "tracker lines not on $th: $bad"
    [ "$(wc -l <"$tmp/links")" -ge 6 ] || fail "fewer than 3 peer links (ss above)"
    bad=$(awk -v a="$1" 'index($1, a ":") != 1 || index($2, a ":") != 1' "$tmp/links")
    [ -z "$bad" ] || fail "peer links not on $1: $bad"
    echo "tracker at $t; $(wc -l <"$tmp/links") peer link ends, all on $1"
}

case "$case" in
v4)
    held --bind m0 -- env RALLY_INTERFACE=d0
    check_on 198.18.2.1
    release
    ;;
default)
    held --bind 198.18.1.1
    check_on 198.18.1.1
    release
    ;;
v6)
    held --bind '[fd00:1::1]' -- env RALLY_INTERFACE=fd00:2::1
    check_on '[fd00:2::1]'
    release
    ;;
linklocal)
    held --bind '[fe80::1%m0]'
    check_on '[fd00:1::1]'
    release
    ;;
tracker)
    a=$(printed --bind d0)
    echo "--bind d0: $a"
    case $a in 198.18.2.1:[0-9]*) ;; *) fail "--bind d0 printed '$a'" ;; esac
    a=$(printed --bind '[fd00:2::1]')
    echo "--bind [fd00:2::1]: $a"
    case $a in "[fd00:2::1]:"[0-9]*) ;; *) fail "--bind [fd00:2::1] printed '$a'" ;; esac
    a=$(printed --bind nosuch0)
    [ -z "$a" ] || fail "--bind nosuch0 printed '$a'"
    grep -q "nosuch0" "$tmp/t.err" || fail "--bind nosuch0: no error naming it"
    a=$(printed)
    h=${a%:*}
    echo "every address: $a"
    [ -n "$h" ] || fail "bound to every address it printed nothing"
    in_ns getent ahosts "$(echo "$h" | tr -d '[]')" | grep -q -e '^127\.' -e '^::1 ' &&
        fail "bound to every address it printed '$a', which is loopback"
    ;;
wrong)
    for spec in nosuch0 198.18.9.9 d0; do
        case $spec in
        nosuch0) want="rally_interface=nosuch0: no interface named 'nosuch0'" ;;
        198.18.9.9) want="rally_interface=198.18.9.9: 198.18.9.9 is not an address of this host" ;;
        d0) want="rally_interface=d0: interface 'd0' is down"; in_ns ip link set d0 down ;;
        esac
        in_ns env RALLY_INTERFACE=$spec timeout -k 5 60 "$run" -n 2 --bind m0 "$hold" "$tmp" 10 \
            >"$tmp/out" 2>&1
        rc=$?
        [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "$spec: exit $rc"
        grep -qF "$want" "$tmp/out" || fail "$spec: no line saying \"$want\""
        echo "$spec: $(grep -F "$want" "$tmp/out" | head -1)"
    done
    ;;
*) fail "unknown case" ;;
esac
echo "addr_netns_test $case: passed"
