#!/bin/sh
# swift_rig.sh — a private OpenStack Swift (Debian's python3-swift 2.30) with
# the S3 API (s3api) and tempauth on 127.0.0.1, for the S3 backend's tests.
#
#   tests/rigs/swift_rig.sh start DIR  writes configs, rings and storage under DIR,
#       starts the account, container, object and proxy servers, and returns
#       0 once all four answer and a signed S3 ListBuckets works; `. DIR/env`
#       then sets (and exports) AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
#       AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION and SWIFT_RIG_NETRC, and
#       sets SWIFT_RIG_PIDS.  On failure it stops what it started, says why
#       (with the logs' last lines) and returns 1
#   tests/rigs/swift_rig.sh stop DIR   ends the servers (SIGTERM, SIGKILL after
#       5 s) and waits for them; keeps the logs; safe twice, or before start
#
# Nothing outside DIR is read or written.  Swift 2.30 hard-codes
# /etc/swift/swift.conf, so each server runs through DIR/run.py, which points
# it at DIR (utils.set_swift_dir) before run_wsgi; each conf has swift_dir =
# DIR.  The rings are made with swift's RingBuilder (swift-ring-builder's
# code, without the `swift` package): part power 6, 1 replica, device d1 in
# DIR/srv.  workers = 0: one process a server, no forks.  Logs go to
# DIR/KIND.log (the console handler; syslog's is disabled).  The ports are
# picked free on 127.0.0.1; when one is taken before its server binds it,
# start tries again with new ones (3 tries, each bounded by $SWIFT_RIG_WAIT
# s, 60), so rigs in two DIRs can start at once.  tempauth needs the memcache
# filter: it points at 127.0.0.1:0, where nothing listens (no cache shared
# between rigs; the proxy logs a memcache error a request).
#
# Credentials: tempauth's user_test_tester = testing: the S3 access key is
# "test:tester" (account:user), the secret "testing"; the SigV4 region is
# us-east-1 (s3api's location); path-style URLs only.  curl --user splits
# at the first colon: use DIR/netrc (--netrc-file), or libcurl's
# CURLOPT_USERNAME + CURLOPT_PASSWORD.  curl 7.88 sends no
# x-amz-content-sha256, which s3api requires: set it (UNSIGNED-PAYLOAD or the
# body's sha256 hex) on every request; and it signs the query as written, so
# write it canonical (sorted, %XX-encoded, "uploads=" not "uploads").
#
# The object server keeps metadata in user xattrs: when DIR/srv has none
# (os.setxattr fails), the rig mounts a tmpfs there (size $SWIFT_RIG_TMPFS,
# 512m; tmpfs has user xattrs since Linux 6.6) and stop unmounts it.  Each
# server carries SWIFT_RIG_TAG=DIR in its environment: stop ends those too.
set -u
py=${SWIFT_RIG_PYTHON:-/usr/bin/python3} # pyenv's python3 has no swift
kinds="account container object proxy"

say() { echo "swift_rig: $*" >&2; }

# alive PID: running, and not a zombie its parent has not reaped yet
alive() {
    kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

xattr_ok() {
    "$py" -c 'import os, sys
f = sys.argv[1] + "/.xattr-probe"
open(f, "w").close()
try: os.setxattr(f, "user.swift.probe", b"x" * 4000)
finally: os.unlink(f)' "$1" 2>/dev/null
}

# kill_all DIR: what carries our tag, and the pids of DIR/KIND.pid still
# running DIR/run.py: SIGTERM, SIGKILL after 5 s; wait for them (10 s)
kill_all() {
    pids=$(grep -lzx "SWIFT_RIG_TAG=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$$")
    for p in $(cat "$1"/*.pid 2>/dev/null); do
        grep -qsa "$1/run.py" "/proc/$p/cmdline" && pids="$pids $p"
    done
    kill -TERM $pids 2>/dev/null
    i=0 left=
    while [ $i -lt 100 ]; do
        left=
        for p in $pids; do alive "$p" && left="$left $p"; done
        [ -z "$left" ] && break
        [ $i -eq 50 ] && kill -KILL $left 2>/dev/null
        i=$((i + 1))
        sleep 0.1
    done
    [ -n "$left" ] && say "still running after SIGKILL:$left"
    rm -f "$1"/*.pid
}

rig_stop() {
    [ -d "$1" ] || return 0
    d=$(cd "$1" && pwd -P)
    kill_all "$d"
    [ -f "$d/srv.tmpfs" ] && { umount "$d/srv" 2>/dev/null || umount -l "$d/srv"; rm -f "$d/srv.tmpfs"; }
    return 0
}

# conf KIND PORT: KIND-server.conf on stdout
conf() {
    pipeline="healthcheck $1-server"
    [ "$1" = proxy ] && pipeline="catch_errors gatekeeper healthcheck proxy-logging cache \
listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server"
    printf '%s\n' "# written by tests/rigs/swift_rig.sh" "[DEFAULT]" "bind_ip = 127.0.0.1" "bind_port = $2" \
        "bind_timeout = 3" "workers = 0" "swift_dir = $d" "devices = $d/srv" "mount_check = false" \
        "recon_cache_path = $d" "log_level = INFO" "[pipeline:main]" "pipeline = $pipeline" \
        "[app:$1-server]" "use = egg:swift#$1"
    [ "$1" = proxy ] && cat <<EOF
account_autocreate = true
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:0
EOF
    for f in healthcheck catch_errors gatekeeper listing_formats copy slo dlo; do
        printf '[filter:%s]\nuse = egg:swift#%s\n' "$f" "$f"
    done
}

# try_once: ports, configs, rings, servers; 0 when all four answer
try_once() {
    set -- $("$py" -c 'import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))') || return 1
    ap=$1 cp=$2 op=$3 pp=$4
    for k in $kinds; do eval conf "$k" "\$$(echo "$k" | cut -c1)p" >"$d/$k-server.conf"; done
    "$py" - "$d" "$ap" "$cp" "$op" <<'EOF' >"$d/rings.log" 2>&1 || { say "rings: $(tail -n 3 "$d/rings.log")"; return 1; }
import sys
import swift.common.middleware.s3api.s3api, swift.common.middleware.tempauth
from swift.common.ring import RingBuilder
for kind, port in zip(("account", "container", "object"), sys.argv[2:]):
    b = RingBuilder(6, 1, 1)  # part power 6, 1 replica, 1 h min_part_hours
    b.add_dev({"region": 1, "zone": 1, "ip": "127.0.0.1", "port": int(port), "device": "d1", "weight": 1})
    b.rebalance()
    b.save("%s/%s.builder" % (sys.argv[1], kind))
    b.get_ring().save("%s/%s.ring.gz" % (sys.argv[1], kind))
EOF
    for k in $kinds; do # no greendns: it costs seconds a server here
        SWIFT_RIG_TAG=$d EVENTLET_NO_GREENDNS=yes "$py" "$d/run.py" "$d" "$k" </dev/null >"$d/$k.log" 2>&1 &
        echo $! >"$d/$k.pid"
    done
    tw=$(date +%s)
    for k in $kinds; do
        eval port=\$$(echo "$k" | cut -c1)p
        until curl -sf -m 2 -o /dev/null "http://127.0.0.1:$port/healthcheck"; do
            for j in $kinds; do
                alive "$(cat "$d/$j.pid")" || { say "$j-server exited"; return 1; }
            done
            [ $(($(date +%s) - tw)) -ge "${SWIFT_RIG_WAIT:-60}" ] &&
                { say "$k-server did not answer on port $port in ${SWIFT_RIG_WAIT:-60} s"; return 1; }
            sleep 0.1
        done
    done
    echo 'machine 127.0.0.1 login test:tester password testing' >"$d/netrc"
    code=$(curl -s -m 10 -o "$d/probe.xml" -w '%{http_code}' --netrc-file "$d/netrc" --aws-sigv4 \
        aws:amz:us-east-1:s3 -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "http://127.0.0.1:$pp/")
    [ "$code" = 200 ] || { say "signed S3 ListBuckets gave HTTP $code: $(cat "$d/probe.xml")"; return 1; }
    cat >"$d/env" <<EOF
AWS_ENDPOINT_URL=http://127.0.0.1:$pp
AWS_ACCESS_KEY_ID='test:tester'
AWS_SECRET_ACCESS_KEY=testing
AWS_DEFAULT_REGION=us-east-1
SWIFT_RIG_NETRC='$d/netrc'
SWIFT_RIG_PIDS='$(echo $(cat "$d"/*.pid))'
export AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_DEFAULT_REGION SWIFT_RIG_NETRC
EOF
    say "up in $(($(date +%s) - t0)) s: S3 at http://127.0.0.1:$pp (account $ap, container $cp, object $op)"
}

rig_start() {
    mkdir -p "$1" && d=$(cd "$1" && pwd -P) || { say "cannot make $1"; return 1; }
    t0=$(date +%s)
    ls "$d"/*.pid >/dev/null 2>&1 && { say "$d has a running rig (stop it first)"; return 1; }
    command -v curl >/dev/null 2>&1 || { say "curl is not installed"; return 1; }
    "$py" -c 'import swift' 2>/dev/null ||
        { say "$py has no swift (scripts/deps.sh installs python3-swift)"; return 1; }
    mkdir -p "$d/srv"
    if ! xattr_ok "$d/srv"; then
        mount -t tmpfs -o "size=${SWIFT_RIG_TMPFS:-512m}" swiftrig "$d/srv" && touch "$d/srv.tmpfs" ||
            { say "$d has no user xattrs and a tmpfs cannot be mounted there"; return 1; }
        xattr_ok "$d/srv" || { say "no user xattrs on $d nor on a tmpfs"; rig_stop "$d"; return 1; }
    fi
    mkdir -p "$d/srv/d1"
    printf '[swift-hash]\nswift_hash_path_suffix = %s\n[storage-policy:0]\nname = Policy-0\ndefault = yes\n' \
        "$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" >"$d/swift.conf"
    cat >"$d/run.py" <<'EOF'
# run.py DIR KIND: one swift server, configured from DIR alone
import logging, sys
from swift.common import utils
class NoSyslog(logging.NullHandler):  # verbose=True's console handler logs
    def __init__(self, *args, **kwargs):
        logging.NullHandler.__init__(self)
utils.ThreadSafeSysLogHandler = NoSyslog
d, kind = sys.argv[1:3]
utils.set_swift_dir(d)  # instead of /etc/swift: swift.conf, then policies, constraints
from swift.common import constraints, storage_policy, wsgi
storage_policy.reload_storage_policies()
constraints.reload_constraints()
kw = {}
if kind == "object":
    from swift.obj import server
    kw["global_conf_callback"] = server.global_conf_callback
sys.exit(wsgi.run_wsgi("%s/%s-server.conf" % (d, kind), kind + "-server", verbose=True, **kw))
EOF
    for try in 1 2 3; do
        try_once && return 0
        kill_all "$d"
        grep -qs -e "Could not bind" -e "Address already in use" "$d"/*.log || break
        say "try $try: a port was taken; again with new ones"
    done
    rig_stop "$d"
    for k in $kinds; do
        echo "--- last lines of $d/$k.log" >&2
        tail -n 15 "$d/$k.log" >&2 2>/dev/null
    done
    return 1
}

case ${1:-} in
start) [ $# -eq 2 ] && { rig_start "$2"; exit; } ;;
stop) [ $# -eq 2 ] && { rig_stop "$2"; exit; } ;;
esac
echo "usage: $0 start|stop DIR" >&2
exit 2
