#!/usr/bin/env python3
"""dmlc_job.py -- a dmlc tracker and a small launcher, written from
docs/protocol-dmlc.md, to run rally workers the way dmlc-submit does.

  dmlc_job.py [-n N] [--timeout S] [--max-attempts K] [--kill9 TASK:REGEX]
              [--tracker-magic M] [--rabit-args] [--attempt-arg] [--tracker-cmd CMD]
              -- PROGRAM ARGS...

The tracker listens on 127.0.0.1 (a port the kernel picks).  The launcher
starts N copies of PROGRAM with DMLC_TRACKER_URI, DMLC_TRACKER_PORT,
DMLC_TASK_ID (0..N-1), DMLC_NUM_ATTEMPT (0) and DMLC_ROLE=worker; a worker
killed by a signal is started again with the next attempt number (at most
--max-attempts times), as dmlc's local launcher does.  Every worker line is
printed as "[task] line"; the tracker's as "tracker: ...".  --kill9
TASK:REGEX sends SIGKILL to task TASK the first time any worker prints a
line matching REGEX.  --tracker-magic answers the workers' greeting with
another number (a tracker that is not a dmlc tracker).  --rabit-args passes
the four settings as rabit's arguments (rabit_tracker_uri=...,
rabit_tracker_port=, rabit_task_id=, rabit_num_trial=) instead.
--attempt-arg passes a restart's attempt as dmlc-submit --cluster local does:
an argument DMLC_NUM_ATTEMPT=K appended to the command line at each restart
(they pile up; the last counts), the environment keeping 0.
--tracker-cmd "PROGRAM ARGS" runs that tracker instead of the one here
(e.g. "python3 -m xgboost.tracker", the rabit tracker Debian ships).

Exit status: 0 when every worker exited 0 and the tracker saw N shutdowns;
1 when a worker failed; 2 on the time limit.  The last line is
"dmlc_job: restarts=R shutdowns=S".  Every process started here is killed
before exiting.
"""
import argparse
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

MAGIC = 0xFF99
LOCK = threading.Lock()


def say(line):
    with LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


# --- the tracker ------------------------------------------------------------


class Conn:
    """One request: little-endian 32-bit integers, strings as length + bytes."""

    def __init__(self, sock):
        self.sock = sock

    def recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            got = self.sock.recv(n - len(buf))
            if not got:
                raise EOFError("peer closed")
            buf += got
        return buf

    def get_int(self):
        return struct.unpack("<i", self.recv_exact(4))[0]

    def put_int(self, v):
        self.sock.sendall(struct.pack("<i", v))

    def get_str(self):
        return self.recv_exact(self.get_int()).decode()

    def put_str(self, s):
        b = s.encode()
        self.put_int(len(b))
        self.sock.sendall(b)


def layout(n):
    """The tracker's topology: a heap-shaped binary tree (node h has children
    2h+1 and 2h+2) walked depth-first, children in ascending order, the last
    child's walk reversed; a node's rank is its place in that walk, and the
    ring is the walk itself.  Returns (parent, tree neighbours) per rank."""

    def walk(h):
        kids = [c for c in (2 * h + 1, 2 * h + 2) if c < n]
        out = [h]
        for i, c in enumerate(kids):
            w = walk(c)
            out += w[::-1] if i == len(kids) - 1 else w
        return out

    order = walk(0)
    rank_of = {h: r for r, h in enumerate(order)}
    parent, nbrs = {}, {}
    for h in range(n):
        r = rank_of[h]
        p = rank_of[(h - 1) // 2] if h > 0 else -1
        kids = [rank_of[c] for c in (2 * h + 1, 2 * h + 2) if c < n]
        parent[r] = p
        nbrs[r] = sorted(([p] if p >= 0 else []) + kids)
    return parent, nbrs


class Tracker:
    def __init__(self, n, magic):
        self.n = n
        self.magic = magic
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(256)
        self.port = self.lsock.getsockname()[1]
        self.parent, self.nbrs = layout(n)
        self.waiting = {}  # rank -> [host, port, accepts still due]
        self.tasks = {}  # task id -> rank
        self.pending = []  # start requests without a rank yet
        self.todo = list(range(n))
        self.shutdown = set()
        self.done = threading.Event()

    def serve(self):
        while len(self.shutdown) < self.n:
            try:
                sock, addr = self.lsock.accept()
            except OSError:
                return
            sock.settimeout(120)
            try:
                self.request(Conn(sock), addr[0])
            except (OSError, EOFError, struct.error) as exc:
                say("tracker: dropped a request from %s: %s" % (addr[0], exc))
        self.done.set()

    def request(self, c, host):
        if c.get_int() != MAGIC:
            raise EOFError("bad magic")
        c.put_int(self.magic)
        if self.magic != MAGIC:
            return
        rank, world, task, cmd = c.get_int(), c.get_int(), c.get_str(), c.get_str()
        if cmd == "print":
            say("tracker: print: " + c.get_str().rstrip())
            return
        if cmd == "shutdown":
            self.shutdown.add(rank)
            say("tracker: rank %d shut down" % rank)
            return
        assert cmd in ("start", "recover"), cmd
        assert world in (-1, self.n), world
        if rank < 0 and task != "NULL" and task in self.tasks:
            rank = self.tasks[task]
        if rank >= 0:
            say("tracker: %s from rank %d (task %s)" % (cmd, rank, task))
            self.assign(c, host, rank)
            return
        self.pending.append((c, host, task))
        if len(self.pending) < len(self.todo):
            return
        self.pending.sort(key=lambda p: p[1])
        for pc, phost, ptask in self.pending:
            r = self.todo.pop(0)
            if ptask != "NULL":
                self.tasks[ptask] = r
            say("tracker: start: task %s is rank %d" % (ptask, r))
            self.assign(pc, phost, r)
        self.pending = []

    def assign(self, c, host, rank):
        n = self.n
        prev = (rank - 1) % n if n > 1 else -1
        nxt = (rank + 1) % n if n > 1 else -1
        c.put_int(rank)
        c.put_int(self.parent[rank])
        c.put_int(n)
        c.put_int(len(self.nbrs[rank]))
        for r in self.nbrs[rank]:
            c.put_int(r)
        c.put_int(prev)
        c.put_int(nxt)
        links = set(self.nbrs[rank]) | ({prev, nxt} - {-1, rank})
        while True:
            good = {c.get_int() for _ in range(c.get_int())}
            assert good <= links, (good, links)
            bad = sorted(links - good)
            conn = [r for r in bad if r in self.waiting]
            c.put_int(len(conn))
            c.put_int(len(bad) - len(conn))
            for r in conn:
                c.put_str(self.waiting[r][0])
                c.put_int(self.waiting[r][1])
                c.put_int(r)
            if c.get_int() == 0:
                break
        port = c.get_int()
        for r in conn:
            self.waiting[r][2] -= 1
            if self.waiting[r][2] == 0:
                del self.waiting[r]
        self.waiting.pop(rank, None)
        if len(bad) > len(conn):
            self.waiting[rank] = [host, port, len(bad) - len(conn)]


class ExternalTracker:
    """Another tracker program (`--tracker-cmd`), started with --num-workers N
    --host-ip 127.0.0.1; it prints DMLC_TRACKER_ENV_START, NAME=VALUE lines
    and DMLC_TRACKER_ENV_END (as dmlc's and xgboost's trackers do), and
    exits 0 once every rank has shut down."""

    def __init__(self, n, cmd):
        self.n = n
        self.proc = subprocess.Popen(
            cmd + ["--num-workers", str(n), "--host-ip", "127.0.0.1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        env = {}
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            if line == "DMLC_TRACKER_ENV_END":
                break
            if "=" in line:
                k, v = line.split("=", 1)
                env[k] = v
        self.port = int(env["DMLC_TRACKER_PORT"])
        self.shutdown = set()
        self.done = threading.Event()
        threading.Thread(target=self.pump, daemon=True).start()

    def pump(self):
        for raw in self.proc.stdout:
            say("tracker: " + raw.decode(errors="replace").rstrip("\n"))
        if self.proc.wait() == 0:
            self.shutdown = set(range(self.n))
        self.done.set()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


# --- the launcher -------------------------------------------------------------


class Job:
    def __init__(self, args, tracker):
        self.args = args
        self.tracker = tracker
        self.procs = {}  # task -> Popen
        self.attempt = {}
        self.restarts = 0
        self.kill = None
        if args.kill9:
            task, regex = args.kill9.split(":", 1)
            self.kill = (int(task), re.compile(regex))

    def start(self, task):
        env = dict(os.environ)
        settings = dict(
            DMLC_TRACKER_URI="127.0.0.1",
            DMLC_TRACKER_PORT=str(self.tracker.port),
            DMLC_TASK_ID=str(task),
            DMLC_NUM_ATTEMPT=str(self.attempt[task]),
        )
        argv = list(self.args.program)
        if self.args.attempt_arg:  # dmlc-core's local.py: cmd += " DMLC_NUM_ATTEMPT=%d"
            argv += ["DMLC_NUM_ATTEMPT=%d" % k for k in range(1, self.attempt[task] + 1)]
            settings["DMLC_NUM_ATTEMPT"] = "0"
        if self.args.rabit_args:  # rabit's argument spellings instead
            names = ["rabit_tracker_uri", "rabit_tracker_port", "rabit_task_id", "rabit_num_trial"]
            argv += ["%s=%s" % (k, v) for k, v in zip(names, settings.values())]
        else:
            env.update(settings)
        env["DMLC_ROLE"] = "worker"
        env.pop("RALLY_TRACKER", None)
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.procs[task] = p
        threading.Thread(target=self.pump, args=(task, p), daemon=True).start()

    def pump(self, task, p):
        for raw in p.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            say("[%d] %s" % (task, line))
            if self.kill and self.kill[1].search(line):
                victim = self.procs[self.kill[0]]
                self.kill = None
                say("dmlc_job: kill -9 task %d (pid %d)" % (self.args.kill9_task, victim.pid))
                victim.send_signal(signal.SIGKILL)

    def run(self):
        for t in range(self.args.n):
            self.attempt[t] = 0
            self.start(t)
        deadline = time.monotonic() + self.args.timeout
        while time.monotonic() < deadline:
            live = 0
            for t, p in list(self.procs.items()):
                rc = p.poll()
                if rc is None:
                    live += 1
                elif rc < 0 and self.attempt[t] + 1 < self.args.max_attempts:
                    self.attempt[t] += 1
                    self.restarts += 1
                    say("dmlc_job: task %d died (signal %d); attempt %d" % (t, -rc, self.attempt[t]))
                    self.start(t)
                    live += 1
                elif rc != 0:
                    say("dmlc_job: task %d failed (status %d)" % (t, rc))
                    return 1
            if live == 0:
                self.tracker.done.wait(10)
                return 0 if len(self.tracker.shutdown) == self.args.n else 1
            time.sleep(0.05)
        say("dmlc_job: time limit of %d s" % self.args.timeout)
        return 2

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--max-attempts", type=int, default=3)
    ap.add_argument("--kill9")
    ap.add_argument("--rabit-args", action="store_true")
    ap.add_argument("--attempt-arg", action="store_true")
    ap.add_argument("--tracker-cmd")
    ap.add_argument("--tracker-magic", type=lambda s: int(s, 0), default=MAGIC)
    ap.add_argument("program", nargs="+")
    args = ap.parse_args()
    args.kill9_task = int(args.kill9.split(":", 1)[0]) if args.kill9 else -1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))  # the finally below kills the workers
    if args.tracker_cmd:
        tracker = ExternalTracker(args.n, args.tracker_cmd.split())
    else:
        tracker = Tracker(args.n, args.tracker_magic)
        threading.Thread(target=tracker.serve, daemon=True).start()
    say("tracker: listening on 127.0.0.1:%d for %d workers" % (tracker.port, args.n))
    job = Job(args, tracker)
    rc = 2
    try:
        rc = job.run()
    finally:
        job.stop()
        if args.tracker_cmd:
            tracker.stop()
        time.sleep(0.1)  # the pumps print the last lines
        say("dmlc_job: restarts=%d shutdowns=%d" % (job.restarts, len(tracker.shutdown)))
    sys.exit(rc)


if __name__ == "__main__":
    main()
