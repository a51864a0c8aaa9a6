# netns_rig.sh — a set of "hosts" made of network namespaces, each running
# its own sshd, for the multi-host test and benchmark.  Sourced by bash.
#
#   . tests/rigs/netns_rig.sh
#   rig_up H [V6]      H hosts: namespaces ${RIG_NS[1..H]}, addresses
#                      ${RIG_IP[1..H]} = 198.18.0.1 .. 198.18.0.H (/24), and
#                      with V6=1 also ${RIG_IP6[i]} = fd00:5253::i (/64);
#                      returns 77 with the reason in RIG_SKIP when it cannot
#                      run here (not root, `ip netns` fails), 1 on an error
#                      (said on stderr; a missing sshd is one)
#   rig_in I cmd...    runs cmd inside host I's namespace
#   rig_ssh I cmd...   runs cmd on host I through ssh (from host 1)
#   rig_link I up|down host I's cable (its port on the bridge)
#   rig_v6_only        each host's IPv4 address removed: jobs use IPv6 only
#   rig_tbf RATE       every cable shaped to RATE (tc's units: 1gbit) both ways;
#                      none: the shaping removed
#   rig_job RALLY_RUN OUT LIMIT [rally-run options] -- PROG ARGS
#                      a job of one rank per host (RIG_SLOTS=S: S per host,
#                      ranks filling hosts in order), started from host 1, on
#                      the addresses ${RIG_ADDR[@]} (RIG_IP, or RIG_IP6)
#   rig_down           removes everything rig_up made (also run by the trap)
#
# The layout: one namespace per host, each with one veth (named $RIG_IF in
# every host, so one interface name serves `btl_tcp_if_include`) whose other
# end is a port of the bridge br0 in a namespace of its own (${RIG_SW}).
# Every veth is created directly inside its namespaces, so no interface ever
# shows in the caller's namespace.  Loopback is up everywhere; no namespace
# has a route out.  Host I runs sshd on ${RIG_IP[I]}:22, as root, with a host
# key and a client key generated in the rig's temp dir $RIG_DIR; the client
# side is ${RIG_DIR}/ssh_config (BatchMode, the written known_hosts,
# IdentityFile) and the wrapper $RIG_SSH (ssh -F that config), and
# ${RIG_SSH_OPTS[@]} holds the same settings as `-o` values for programs that
# take ssh options one by one.  The namespaces share the file system, so
# every binary and file is at the same path on every host; but with
# RIG_PRIVATE=DIR (an existing directory) set before rig_up, each host's
# sshd runs in a mount namespace of its own with a tmpfs of its own at DIR:
# what runs through ssh on host I sees host I's DIR only (a disk of each
# host's own), and the caller sees none of them.
#
# Names.  Everything carries $RIG_TAG = rallymh-<pid>-<start time of that
# process in clock ticks>: the namespaces (<tag>-h<I>, <tag>-sw) and the temp
# dir (<tag>.XXXXXX).  Two runs never collide, and a leftover whose pid is
# gone or now names another process (another start time) is provably from a
# run that was killed: rig_up removes those first (their processes, their
# namespaces, their temp dirs), never anything else.
#
# Bounds.  Every step that waits is bounded (timeout, counted tries), and
# rig_up installs a trap on EXIT, INT and TERM that calls rig_down; a caller
# with a trap of its own calls rig_down from it.  rig_watchdog S makes the
# caller's shell get SIGTERM after S seconds (so its trap still runs when a
# harness would otherwise SIGKILL it).

RIG_IF=rh0
RIG_PFX=rallymh
RIG_SSHD=${RIG_SSHD:-/usr/sbin/sshd}

rig__start_ticks() { # pid: the process's start time (field 22 of stat), or nothing
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    set -- $s
    echo "${20}"
}

rig__stale() { # tag: true when the run that owned tag is gone
    local rest pid start now
    rest=${1#"$RIG_PFX"-}
    pid=${rest%%-*}
    start=${rest#*-}
    case $pid$start in *[!0-9]*) return 1 ;; esac
    now=$(rig__start_ticks "$pid") || return 0
    [ "$now" != "$start" ]
}

rig__kill_ns() { # namespace: every process in it, SIGKILL
    local p
    p=$(ip netns pids "$1" 2>/dev/null)
    [ -n "$p" ] && kill -9 $p 2>/dev/null
    return 0
}

rig__reap_stale() { # leftovers of killed runs (proved by rig__stale), nothing else
    local ns tag d p
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$RIG_PFX-"); do
        tag=${ns%-*}
        rig__stale "$tag" || continue
        echo "netns_rig: removing $ns, left by a killed run" >&2
        rig__kill_ns "$ns"
        ip netns del "$ns" 2>/dev/null
    done
    for d in "${TMPDIR:-/tmp}/$RIG_PFX"-*.*; do
        [ -d "$d" ] || continue
        tag=${d##*/}
        tag=${tag%.*}
        rig__stale "$tag" || continue
        # sshds whose namespace is gone already still name their config here
        for p in $(grep -lF "$d/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
            [ "$p" != "$$" ] && kill -9 "$p" 2>/dev/null
        done
        echo "netns_rig: removing $d, left by a killed run" >&2
        rm -rf "$d"
    done
}

rig_in() { # I cmd...
    local i=$1
    shift
    ip netns exec "${RIG_NS[$i]}" "$@"
}

rig_ssh() { # I cmd...: from host 1, through ssh, to host I
    local i=$1
    shift
    ip netns exec "${RIG_NS[1]}" "$RIG_SSH" "${RIG_IP[$i]}" -- "$@"
}

rig_v6_only() { # the IPv4 addresses removed: jobs use ${RIG_IP6[@]} (rig_up H 1)
    local i
    for i in $(seq 1 "$RIG_N"); do
        [ -n "$(ip -n "${RIG_NS[$i]}" -6 addr show dev "$RIG_IF" scope global)" ] ||
            rig__fail "host $i has no IPv6 address: rig_up $RIG_N 1" || return 1
        ip -n "${RIG_NS[$i]}" addr del "${RIG_IP[$i]}/24" dev "$RIG_IF" || return 1
        RIG_ADDR[i]=${RIG_IP6[$i]}
    done
}

rig_link() { # I up|down: host I's port on the bridge
    ip -n "$RIG_SW" link set "h$1" "$2"
}

rig_tbf() { # RATE: every cable, both directions; burst: 1 ms of RATE, >= 64 KiB; none: unshaped
    local rate=$1 bits burst i
    if [ "$rate" = none ]; then
        for i in $(seq 1 "$RIG_N"); do
            tc -n "${RIG_NS[$i]}" qdisc del dev "$RIG_IF" root 2>/dev/null
            tc -n "$RIG_SW" qdisc del dev "h$i" root 2>/dev/null
        done
        return 0
    fi
    bits=$(tc_rate_bits "$rate") || { echo "netns_rig: bad rate '$rate'" >&2; return 1; }
    burst=$((bits / 8 / 1000))
    [ "$burst" -lt 65536 ] && burst=65536
    for i in $(seq 1 "$RIG_N"); do
        ip -n "${RIG_NS[$i]}" link set "$RIG_IF" gso_max_size 65536 2>/dev/null
        tc -n "${RIG_NS[$i]}" qdisc replace dev "$RIG_IF" root tbf rate "$rate" burst "$burst" \
            latency 50ms || return 1
        tc -n "$RIG_SW" qdisc replace dev "h$i" root tbf rate "$rate" burst "$burst" \
            latency 50ms || return 1
    done
}

tc_rate_bits() { # 1gbit, 10gbit, 500mbit, 2mbit, 64kbit -> bits per second
    local n=${1%%[a-z]*} u=${1##*[0-9]}
    case $n in '' | *[!0-9]*) return 1 ;; esac
    case $u in
    gbit) echo $((n * 1000000000)) ;;
    mbit) echo $((n * 1000000)) ;;
    kbit) echo $((n * 1000)) ;;
    bit) echo "$n" ;;
    *) return 1 ;;
    esac
}

# rig_job RALLY_RUN OUT LIMIT [rally-run options] -- PROG ARGS: an N-host job
# (N = the rig's hosts, rank r on host r+1; but see RIG_SLOTS) started from
# inside host 1 and bounded by LIMIT seconds, in the background ($RIG_JOB,
# whose exit status is the job's; empty, and 1 returned, when RIG_SLOTS is
# bad); all output to OUT, each worker's lines prefixed "[rank] ".
# This is the one place that starts a job: `rally-run --launcher ssh --hosts
# ...` with the tracker on host 1's address.  RIG_SLOTS=S (default 1) gives
# every host S slots (--hosts ip1:S,ip2:S,...): rally-run fills the hosts in
# order, ranks 0..S-1 on host 1, S..2S-1 on host 2, and so on; RIG_WORLD (the
# number of workers) defaults to hosts x slots.  With RIG_CYCLIC=1 as well
# the ranks are dealt over the hosts in turn (rank r on host r mod hosts + 1,
# as Slurm's cyclic distribution or mpirun --map-by node place them).
rig_job() {
    local run=$1 out=$2 limit=$3 hosts="" i o slots=${RIG_SLOTS:-1}
    shift 3
    RIG_JOB=""
    case $slots in '' | 0* | *[!0-9]*) rig__fail "RIG_SLOTS=$slots: not a count of 1 or more" || return 1 ;; esac
    local ropts=() sshopts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        ropts+=("$1")
        shift
    done
    shift
    local deal=1 k # RIG_CYCLIC=1: ranks dealt over the hosts in turn, one at a time
    [ -n "${RIG_CYCLIC:-}" ] && deal=$slots slots=1
    for k in $(seq 1 "$deal"); do
        for i in $(seq 1 "$RIG_N"); do
            case ${RIG_ADDR[$i]} in
            *:*) hosts=$hosts${hosts:+,}[${RIG_ADDR[$i]}]:$slots ;;
            *) hosts=$hosts${hosts:+,}${RIG_ADDR[$i]}:$slots ;;
            esac
        done
    done
    for o in "${RIG_SSH_OPTS[@]}"; do sshopts+=(--ssh-option "$o"); done
    local where=(--hosts "$hosts") # RIG_HOSTFILE: the hosts from that file instead
    [ -n "${RIG_HOSTFILE:-}" ] && where=(--hostfile "$RIG_HOSTFILE")
    ip netns exec "${RIG_NS[1]}" timeout -k 5 "$limit" "$run" -n "${RIG_WORLD:-$((RIG_N * slots * deal))}" \
        --launcher ssh "${where[@]}" "${sshopts[@]}" --host "${RIG_ADDR[1]}" "${ropts[@]}" -- "$@" \
        </dev/null >"$out" 2>&1 &
    RIG_JOB=$!
}

rig_watchdog() { # S: SIGTERM to this shell after S seconds (if it is still this shell)
    local me=$$ start
    start=$(rig__start_ticks $$)
    (
        trap - EXIT INT TERM
        sleep "$1"
        [ "$(rig__start_ticks "$me")" = "$start" ] || exit 0
        echo "netns_rig: watchdog: ${1}s passed, stopping the test" >&2
        kill -TERM "$me" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
    RIG_WATCHDOG=$!
}

rig_down() {
    local i
    if [ -n "${RIG_WATCHDOG:-}" ]; then # the watchdog first, then its sleep
        i=$(pgrep -P "$RIG_WATCHDOG")
        kill "$RIG_WATCHDOG" 2>/dev/null
        [ -n "$i" ] && kill $i 2>/dev/null
    fi
    RIG_WATCHDOG=""
    [ -n "${RIG_TAG:-}" ] || return 0
    for i in "${RIG_SSHD_PIDS[@]}"; do kill -9 "$i" 2>/dev/null; done
    for i in $(seq 1 "${RIG_N:-0}"); do
        rig__kill_ns "${RIG_NS[$i]}"
        ip netns del "${RIG_NS[$i]}" 2>/dev/null
    done
    if [ -n "${RIG_SW:-}" ]; then
        rig__kill_ns "$RIG_SW"
        ip netns del "$RIG_SW" 2>/dev/null
    fi
    [ -n "${RIG_DIR:-}" ] && rm -rf "$RIG_DIR"
    RIG_TAG="" RIG_DIR="" RIG_SW="" RIG_N=0 RIG_SSHD_PIDS=()
    return 0
}

rig__fail() {
    echo "netns_rig: $*" >&2
    return 1
}

rig_up() { # H [V6]
    local h=$1 v6=${2:-0} i start
    RIG_N=0 RIG_NS=() RIG_IP=() RIG_IP6=() RIG_ADDR=() RIG_SSHD_PIDS=() RIG_SKIP=""
    if [ "$(id -u)" -ne 0 ]; then
        RIG_SKIP="not root: network namespaces need root"
        return 77
    fi
    if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
        RIG_SKIP="'ip netns' does not work here (iproute2 missing or no namespace support)"
        return 77
    fi
    if [ ! -x "$RIG_SSHD" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
        rig__fail "no $RIG_SSHD or ssh: scripts/deps.sh installs openssh-server" || return 1
    fi
    rig__reap_stale
    start=$(rig__start_ticks $$) || rig__fail "cannot read /proc/$$/stat" || return 1
    RIG_TAG=$RIG_PFX-$$-$start
    trap 'rig_down' EXIT
    trap 'rig_down; trap - EXIT; exit 130' INT
    trap 'rig_down; trap - EXIT; exit 143' TERM
    RIG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$RIG_TAG.XXXXXX") || rig__fail "mktemp failed" || return 1
    RIG_SW=$RIG_TAG-sw
    RIG_N=$h
    for i in $(seq 1 "$h"); do RIG_NS[i]=$RIG_TAG-h$i; done

    # the switch, then one namespace and one cable per host
    ip netns add "$RIG_SW" || rig__fail "cannot create the namespace $RIG_SW" || return 1
    ip -n "$RIG_SW" link set lo up &&
        ip -n "$RIG_SW" link add br0 type bridge forward_delay 0 &&
        ip -n "$RIG_SW" link set br0 up || rig__fail "cannot make the bridge in $RIG_SW" || return 1
    for i in $(seq 1 "$h"); do
        RIG_IP[i]=198.18.0.$i
        RIG_IP6[i]=fd00:5253::$i
        RIG_ADDR[i]=${RIG_IP[$i]}
        ip netns add "${RIG_NS[$i]}" || rig__fail "cannot create the namespace ${RIG_NS[$i]}" || return 1
        ip link add "$RIG_IF" netns "${RIG_NS[$i]}" type veth peer name "h$i" netns "$RIG_SW" ||
            rig__fail "cannot create the veth pair of host $i" || return 1
        ip -n "$RIG_SW" link set "h$i" master br0 &&
            ip -n "$RIG_SW" link set "h$i" up &&
            ip -n "${RIG_NS[$i]}" link set lo up &&
            ip -n "${RIG_NS[$i]}" addr add "${RIG_IP[$i]}/24" dev "$RIG_IF" &&
            ip -n "${RIG_NS[$i]}" link set "$RIG_IF" up || rig__fail "cannot set up host $i" || return 1
        if [ "$v6" = 1 ]; then
            ip -n "${RIG_NS[$i]}" addr add "${RIG_IP6[$i]}/64" dev "$RIG_IF" nodad ||
                rig__fail "cannot give host $i the address ${RIG_IP6[$i]}" || return 1
        fi
        [ -z "$(ip -n "${RIG_NS[$i]}" route show default)" ] ||
            rig__fail "host $i has a default route" || return 1
    done

    # keys, the server's and the client's configuration
    ssh-keygen -q -t ed25519 -N '' -C "$RIG_TAG host" -f "$RIG_DIR/host_key" &&
        ssh-keygen -q -t ed25519 -N '' -C "$RIG_TAG client" -f "$RIG_DIR/id" ||
        rig__fail "ssh-keygen failed" || return 1
    cp "$RIG_DIR/id.pub" "$RIG_DIR/authorized_keys"
    : >"$RIG_DIR/known_hosts"
    for i in $(seq 1 "$h"); do
        echo "${RIG_IP[$i]} $(cut -d' ' -f1,2 "$RIG_DIR/host_key.pub")" >>"$RIG_DIR/known_hosts"
        [ "$v6" = 1 ] &&
            echo "${RIG_IP6[$i]} $(cut -d' ' -f1,2 "$RIG_DIR/host_key.pub")" >>"$RIG_DIR/known_hosts"
    done
    RIG_SSH_OPTS=(BatchMode=yes StrictHostKeyChecking=no "UserKnownHostsFile=$RIG_DIR/known_hosts"
        GlobalKnownHostsFile=/dev/null "IdentityFile=$RIG_DIR/id" IdentitiesOnly=yes User=root
        ConnectTimeout=5 ServerAliveInterval=1 ServerAliveCountMax=3 LogLevel=ERROR)
    {
        echo "Host *"
        for i in "${RIG_SSH_OPTS[@]}"; do echo "    ${i%%=*} ${i#*=}"; done
    } >"$RIG_DIR/ssh_config"
    RIG_SSH=$RIG_DIR/ssh
    printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$RIG_DIR/ssh_config" >"$RIG_SSH"
    chmod +x "$RIG_SSH"
    # sshd's privilege separation directory (compiled in; the package makes it at boot)
    [ -d /run/sshd ] || mkdir -m 0755 /run/sshd

    for i in $(seq 1 "$h"); do
        {
            echo "ListenAddress ${RIG_IP[$i]}"
            [ "$v6" = 1 ] && echo "ListenAddress ${RIG_IP6[$i]}"
            echo "HostKey $RIG_DIR/host_key"
            echo "PidFile $RIG_DIR/sshd.$i.pid"
            echo "AuthorizedKeysFile $RIG_DIR/authorized_keys"
            echo "PermitRootLogin prohibit-password"
            echo "PasswordAuthentication no"
            echo "KbdInteractiveAuthentication no"
            echo "UsePAM no"
            echo "StrictModes no"
            echo "PrintMotd no"
            echo "UseDNS no"
            echo "MaxStartups 200"
            echo "MaxSessions 200"
            echo "ClientAliveInterval 1"
            echo "ClientAliveCountMax 3"
            echo "LogLevel ERROR"
        } >"$RIG_DIR/sshd_config.$i"
        if [ -n "${RIG_PRIVATE:-}" ]; then # sshd execs in place: $! stays its pid
            ip netns exec "${RIG_NS[$i]}" unshare -m --propagation private sh -c \
                'mount -t tmpfs -o size=256m,mode=0755 "rally-h$4" "$1" && exec "$2" -D -e -f "$3"' \
                sh "$RIG_PRIVATE" "$RIG_SSHD" "$RIG_DIR/sshd_config.$i" "$i" \
                </dev/null >>"$RIG_DIR/sshd.$i.log" 2>&1 &
        else
            ip netns exec "${RIG_NS[$i]}" "$RIG_SSHD" -D -e -f "$RIG_DIR/sshd_config.$i" \
                </dev/null >>"$RIG_DIR/sshd.$i.log" 2>&1 &
        fi
        RIG_SSHD_PIDS+=($!)
        disown $!
    done
    # each sshd answers through the cable (from host 1), within 20 tries
    for i in $(seq 1 "$h"); do
        local n=0
        until [ "$(timeout 10 ip netns exec "${RIG_NS[1]}" "$RIG_SSH" "${RIG_IP[$i]}" \
            cat /proc/self/net/dev 2>/dev/null | grep -c "$RIG_IF:")" = 1 ]; do
            n=$((n + 1))
            [ "$n" -gt 20 ] && {
                cat "$RIG_DIR/sshd.$i.log" >&2
                rig__fail "the sshd of host $i (${RIG_IP[$i]}) does not answer"
                return 1
            }
            sleep 0.25
        done
    done
    return 0
}
