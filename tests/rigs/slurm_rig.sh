# slurm_rig.sh — a private one-node Slurm (munged, slurmctld, slurmd) that a
# test starts as root and stops again.  Sourced (POSIX sh); the test calls
#
#   slurm_rig_start DIR   DIR: an empty directory of the test's; returns 0
#                         when the node is idle and `srun -n 2 hostname` ran,
#                         else non-zero with the reason in $slurm_rig_why
#                         (which daemon, the last lines of its log)
#   slurm_rig_stop        ends every process the rig started (the daemons,
#                         slurmstepd and the job steps' tasks), removes the
#                         rig's files; safe to call twice, or before start
#
# and has its trap call slurm_rig_stop.  Everything lives under DIR/slurm: a
# munge key made here, munged on its own socket, a slurm.conf written here
# (exported as SLURM_CONF) with the state, spool, pid and log files beside it
# and the controller's and slurmd's ports picked free on 127.0.0.1.  The
# machine's /etc/slurm and /etc/munge are not read or written (installing
# Debian's munge made /etc/munge/munge.key; we use our own key).
#
# The node is this host (`hostname -s`) at 127.0.0.1, declared with
# max(8, 2 x cores) CPUs (SlurmdParameters=config_overrides lets slurmd
# accept more than the machine has), so a 4-task allocation and its steps,
# and a restarted step beside them, fit on a 2-core machine.  No cgroups:
# proctrack/linuxproc, task/none, no accounting.
#
# Every daemon and every task a step runs carries SLURM_RIG_TAG=DIR/slurm in
# its environment (slurmd passes its own to slurmstepd; srun passes the
# caller's to the tasks): slurm_rig_stop kills what carries it.

slurm_rig_dir= slurm_rig_why= slurm_rig_node= slurm_rig_pids=

# slurm_rig_log NAME: the last lines of a daemon's log, for $slurm_rig_why
slurm_rig_log() {
    if [ -s "$slurm_rig_dir/$1.log" ]; then
        echo "--- last lines of $1's log ---"
        tail -n 15 "$slurm_rig_dir/$1.log"
    else
        echo "($1 wrote no log)"
    fi
}

# slurm_rig_fail TEXT DAEMON: set the reason and return 1
slurm_rig_fail() {
    slurm_rig_why="$1
$(slurm_rig_log "$2")"
    return 1
}

# slurm_rig_alive PID
slurm_rig_alive() { kill -0 "$1" 2>/dev/null; }

# slurm_rig_ports: two ports free on 127.0.0.1 (and on the wildcard, where
# slurmctld and slurmd bind), held open together so they differ
slurm_rig_ports() {
    python3 -c 'import socket
ss = []
for _ in range(2):
    s = socket.socket()
    s.bind(("", 0))
    ss.append(s)
print(" ".join(str(s.getsockname()[1]) for s in ss))'
}

# slurm_rig_wait TRIES STEP CMD...: until CMD succeeds, at most TRIES times
slurm_rig_wait() {
    n=$1 step=$2
    shift 2
    while [ "$n" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        n=$((n - 1))
        sleep "$step"
    done
    return 1
}

slurm_rig_start() {
    slurm_rig_dir=$1/slurm
    slurm_rig_why=
    d=$slurm_rig_dir
    for p in munged mungekey slurmctld slurmd srun sinfo scontrol python3; do
        command -v "$p" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
        command -v "$p" >/dev/null 2>&1 || {
            slurm_rig_why="$p is not installed (scripts/deps.sh installs slurm-wlm and munge)"
            return 1
        }
    done
    [ "$(id -u)" -eq 0 ] || {
        slurm_rig_why="the rig starts slurmd and munged as root; this is uid $(id -u)"
        return 1
    }
    mkdir -m 0700 "$d" "$d/state" "$d/spool" || {
        slurm_rig_why="cannot make $d"
        return 1
    }
    SLURM_RIG_TAG=$d
    export SLURM_RIG_TAG

    # munge: our own key, socket, pid, seed and log
    mungekey --create --keyfile="$d/munge.key" >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 2>/dev/null
    chmod 0400 "$d/munge.key"
    munged -F --force --key-file="$d/munge.key" --socket="$d/munge.sock" \
        --pid-file="$d/munged.pid" --seed-file="$d/munged.seed" \
        --log-file="$d/munged.log" >>"$d/munged.log" 2>&1 &
    slurm_rig_pids=$!
    slurm_rig_wait 50 0.2 test -S "$d/munge.sock" ||
        { slurm_rig_fail "munged did not open its socket $d/munge.sock within 10 s" munged; return 1; }
    echo hello | munge --socket="$d/munge.sock" 2>"$d/munge.err" | unmunge --socket="$d/munge.sock" >/dev/null 2>>"$d/munge.err" ||
        { slurm_rig_fail "munge/unmunge through our munged failed: $(cat "$d/munge.err")" munged; return 1; }

    slurm_rig_node=$(hostname -s)
    cores=$(nproc)
    cpus=$((2 * cores))
    [ "$cpus" -lt 8 ] && cpus=8
    set -- $(slurm_rig_ports)
    ctld_port=$1 slurmd_port=$2
    : >"$d/plugstack.conf"
    cat >"$d/slurm.conf" <<EOF
# written by tests/rigs/slurm_rig.sh for one test; removed with it
ClusterName=rallyrig
SlurmctldHost=$slurm_rig_node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$d/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
SlurmdTimeout=300
InactiveLimit=0
KillWait=5
MinJobAge=30
NodeName=$slurm_rig_node NodeAddr=127.0.0.1 NodeHostname=$slurm_rig_node CPUs=$cpus State=UNKNOWN
PartitionName=rig Nodes=$slurm_rig_node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
    SLURM_CONF=$d/slurm.conf
    export SLURM_CONF

    slurmctld -D -c -f "$SLURM_CONF" >>"$d/slurmctld.out" 2>&1 &
    ctld=$!
    slurm_rig_pids="$slurm_rig_pids $ctld"
    i=0
    until scontrol ping >/dev/null 2>&1; do
        i=$((i + 1))
        slurm_rig_alive "$ctld" || { slurm_rig_fail "slurmctld exited: $(tail -n 5 "$d/slurmctld.out")" slurmctld; return 1; }
        [ $i -gt 150 ] && {
            slurm_rig_fail "slurmctld did not answer \`scontrol ping\` on port $ctld_port within 30 s" slurmctld
            return 1
        }
        sleep 0.2
    done
    slurmd -D -f "$SLURM_CONF" -N "$slurm_rig_node" >>"$d/slurmd.out" 2>&1 &
    sd=$!
    slurm_rig_pids="$slurm_rig_pids $sd"
    i=0
    until [ "$(sinfo -h -n "$slurm_rig_node" -o %t 2>/dev/null)" = idle ]; do
        i=$((i + 1))
        slurm_rig_alive "$sd" || { slurm_rig_fail "slurmd exited: $(tail -n 5 "$d/slurmd.out")" slurmd; return 1; }
        [ $i -gt 300 ] && {
            slurm_rig_fail "node $slurm_rig_node is not idle after 60 s: $(sinfo -h -N -o '%N %t %E' 2>&1)" slurmd
            return 1
        }
        sleep 0.2
    done
    got=$(timeout -k 5 60 srun -n 2 -t 1 hostname 2>"$d/srun.err" | sort -u)
    [ "$got" = "$(hostname)" ] ||
        { slurm_rig_fail "\`srun -n 2 hostname\` gave '$got': $(tail -n 5 "$d/srun.err")" slurmd; return 1; }
    return 0
}

# slurm_rig_tagged: the processes whose environment carries our tag, not
# this shell or its ancestors (which may, when the test exported it)
slurm_rig_tagged() {
    [ -n "$slurm_rig_dir" ] || return 0
    env -u SLURM_RIG_TAG grep -lzx "SLURM_RIG_TAG=$slurm_rig_dir" /proc/[0-9]*/environ 2>/dev/null |
        cut -d/ -f3 |
        grep -vx -e "$$" -e "$PPID"
}

slurm_rig_stop() {
    [ -n "$slurm_rig_dir" ] || return 0
    # jobs first, so slurmd ends their steps; then everything tagged
    [ -f "$slurm_rig_dir/slurm.conf" ] && slurm_rig_alive "${slurm_rig_pids##* }" &&
        timeout 10 scancel --quiet --full -u "$(id -un)" >/dev/null 2>&1
    for p in $slurm_rig_pids; do kill -TERM "$p" 2>/dev/null; done
    i=0
    while [ $i -lt 25 ]; do
        left=
        for p in $slurm_rig_pids; do slurm_rig_alive "$p" && left="$left $p"; done
        [ -z "$left" ] && break
        i=$((i + 1))
        sleep 0.2
    done
    left=$(slurm_rig_tagged)
    kill -9 $slurm_rig_pids $left 2>/dev/null
    for p in $slurm_rig_pids; do wait "$p" 2>/dev/null; done
    rm -rf "$slurm_rig_dir"
    slurm_rig_dir= slurm_rig_pids=
    unset SLURM_CONF SLURM_RIG_TAG
}
