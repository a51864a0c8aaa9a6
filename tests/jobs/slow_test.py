#!/usr/bin/env python3
"""slow_test.py — the rank the others wait for (docs/status.md, "Who the
others wait for"), named and given up, on real jobs of tests/progs/records.c
(one allreduce and one checkpoint an iteration; its bits do not depend on
the number of workers) made slow on purpose by rally_mock's lag point.

    python3 tests/jobs/slow_test.py CASE BUILD_DIR

  named        N = 8, rank 5 sleeps 100 ms before each allreduce from version 5
               on, for 50 calls: it is named (rally-run's line, status.json's
               lateness, /metrics' rally_rank_lateness_ratio and
               rally_host_lateness_ratio) before those 50 calls are over, nobody
               else is, and the result is the failure-free one
  clean        N = 8 without a lag, long enough for every rank's window to be
               judged: status.json shows every rank's lateness, all below the
               mark, and rally-run names nobody
  give_up      N = 8, --min-workers 6 --give-up-slow 50:20 with rank 5 lagging:
               rank 5 is named, then given up as slow; the job goes on with 7
               workers and ends with the failure-free result
  lag_refused  a lag point without a sleep is refused at the start, saying so

Every case is bounded in time (alarm) and kills every process it started.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import jsonschema

CASE, BUILD = sys.argv[1], os.path.abspath(sys.argv[2])
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(BUILD, "rally-run")
RECORDS = os.path.join(BUILD, "tests", "records_mock")
with open(os.path.join(SRC, "docs", "status.schema.json")) as f:
    STATUS = jsonschema.Draft202012Validator(json.load(f))
TMP = tempfile.mkdtemp(prefix="rally-slow-test-")
GROUPS = []
NAMED = re.compile(r"^rally-run: rank (\d+) \(host (\S+)\) arrives (\d+) % after the median "
                   r"over the last (\d+) calls$", re.M)
MARK = 0.25  # watch/late.h's RALLY__LATE_NAMED


def cleanup(*_):
    for pg in GROUPS:
        try:
            os.killpg(pg, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(TMP, ignore_errors=True)


def on_alarm(*_):
    raise TimeoutError("the case did not finish within its time")


signal.signal(signal.SIGALRM, on_alarm)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


def fail(msg):
    raise AssertionError(msg)


class Job:
    """rally-run in a session of its own, its output in a file."""

    def __init__(self, args):
        self.log = open(os.path.join(TMP, "job%d.log" % len(GROUPS)), "w+")
        env = dict(os.environ, RALLY_MOCK_SYNC=TMP)
        self.p = subprocess.Popen([RUN] + args, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        GROUPS.append(self.p.pid)

    def text(self):
        self.log.flush()
        with open(self.log.name) as g:
            return g.read()

    def url(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = re.search(r"rally-run: status: (http://\S+)", self.text())
            if m:
                return m.group(1).rstrip("/") + "/"
            if self.p.poll() is not None:
                fail("rally-run ended before serving:\n" + self.text())
            time.sleep(0.05)
        fail("rally-run printed no status address:\n" + self.text())

    def wait(self, timeout=120):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            fail("the job did not end within %d s:\n%s" % (timeout, self.text()[-4000:]))


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def status(base):
    """status.json, valid against its schema; None once the job is gone."""
    try:
        st = json.loads(get(base + "status.json"))
    except OSError:
        return None
    errors = sorted(STATUS.iter_errors(st), key=str)
    if errors:
        fail("status.json against docs/status.schema.json: %s\n%s" % (errors[0], json.dumps(st)))
    return st


def digest(text):
    m = re.search(r"records: result digest=([0-9a-f]+)", text)
    if not m:
        fail("no result line in:\n" + text[-4000:])
    return m.group(1)


def failure_free(n, iters):
    job = Job(["-n", str(n), RECORDS, "1000", str(iters)])
    if job.wait(60) != 0:
        fail("the failure-free job failed:\n" + job.text())
    return digest(job.text())


LAG = "rally_mock=5,5,0,0,lag,100"  # rank 5, from version 5 on, 100 ms a call


def named():
    signal.alarm(150)
    job = Job(["-n", "8", "--status", "0", RECORDS, "1000", "55", LAG])
    base = job.url()
    seen = None  # rank 5's calls when status.json first named it, and /metrics then
    while job.p.poll() is None:
        st = status(base)
        if st is None:
            break
        r5 = [x for x in st["ranks"] if x["rank"] == 5]
        if seen is None and r5 and r5[0]["lateness"] is not None and r5[0]["lateness"] >= MARK:
            try:
                metrics = get(base + "metrics")
            except OSError:
                break
            seen = (r5[0]["calls"], st, metrics)
        for x in st["ranks"]:
            if x["rank"] != 5 and x["lateness"] is not None and x["lateness"] >= MARK:
                fail("rank %d named too: %s" % (x["rank"], json.dumps(st["ranks"])))
        time.sleep(0.1)
    if job.wait() != 0:
        fail("the job failed:\n" + job.text()[-4000:])
    out = job.text()
    if seen is None:
        fail("status.json never named rank 5 in its 50 slow calls:\n" + out[-3000:])
    calls, st, metrics = seen
    # from version 5 on: calls 6 .. 55 are the slow ones
    if calls > 55:
        fail("status.json named rank 5 only after %d calls" % calls)
    host = [x for x in st["ranks"] if x["rank"] == 5][0]["host"]
    h = [x for x in st["hosts"] if x["host"] == host]
    if not h or h[0]["lateness"] is None or h[0]["lateness"] < MARK or h[0]["ranks"] != 8:
        fail("status.json's hosts do not say the host is late: %s" % json.dumps(st["hosts"]))
    m = re.search(r'^rally_rank_lateness_ratio\{rank="5"\} ([0-9.]+)$', metrics, re.M)
    if not m or not MARK <= float(m.group(1)) <= 1.0:
        fail("/metrics does not say rank 5 is late:\n" + metrics)
    # a lateness is a share of a call's time: 1.0 when the others wait the whole call
    m = re.search(r'^rally_host_lateness_ratio\{host="%s"\} ([0-9.]+)$' % re.escape(host),
                  metrics, re.M)
    if not m or not MARK <= float(m.group(1)) <= 1.0:
        fail("/metrics has no lateness of host %s:\n%s" % (host, metrics))
    lines = NAMED.findall(out)
    if not lines or any(x[0] != "5" or x[1] != host for x in lines):
        fail("rally-run's lines do not name rank 5 (host %s) alone: %s\n%s" %
             (host, lines, out[-3000:]))
    if int(lines[0][2]) < 100 * MARK:
        fail("rank 5 named at %s %%" % lines[0][2])
    if digest(out) != failure_free(8, 55):
        fail("the lag changed the result")
    print("named: rank 5 named at call %d (status.json); rally-run said %s" % (calls, lines))


def clean():
    signal.alarm(150)
    job = Job(["-n", "8", "--status", "0", RECORDS, "1000", "400", "pause=10"])
    base = job.url()
    judged, worst = 0, -1.0
    while job.p.poll() is None:
        st = status(base)
        if st is None:
            break
        late = [x["lateness"] for x in st["ranks"] if x["state"] == "running"]
        if len(late) == 8 and all(v is not None for v in late):
            judged += 1
            worst = max(worst, max(late))
        if any(v is not None and v >= MARK for v in late):
            fail("a rank is named in a clean run: %s" % json.dumps(st["ranks"]))
        time.sleep(0.1)
    if job.wait() != 0:
        fail("the job failed:\n" + job.text()[-4000:])
    if judged < 3:
        fail("every rank's lateness was known in %d looks only (the measure never ran)" % judged)
    if NAMED.search(job.text()) or "arrives late" in job.text():
        fail("rally-run named a rank in a clean run:\n" + job.text()[-3000:])
    print("clean: %d looks at 8 known lateness values, the largest %.3f" % (judged, worst))


def give_up():
    signal.alarm(200)
    job = Job(["-n", "8", "--min-workers", "6", "--give-up-slow", "50:20", RECORDS, "1000",
               "120", LAG])
    if job.wait(150) != 0:
        fail("the job failed:\n" + job.text()[-4000:])
    out = job.text()
    for pat in [r"^rally-run: rank 5 \(host \S+\) arrives \d+ % after the median",
                r"^rally-run: rank 5 died \(killed by signal 9: given up as slow: it arrived \d+ % "
                r"after the median or later for 20 calls \(--give-up-slow 50:20\)\); "
                r"--give-up-slow: giving it up$",
                r"^rally-run: rank 5 lost for good: going on with 7 workers from version \d+$",
                r"^rally-run: summary: deaths=1 .* lost-for-good=5 workers=7$"]:
        if not re.search(pat, out, re.M):
            fail("no line /%s/ in:\n%s" % (pat, out[-4000:]))
    if digest(out) != failure_free(8, 120):
        fail("the job given up a slow rank ended with another result")
    print("give_up: rank 5 given up, the failure-free result")


def lag_refused():
    signal.alarm(60)
    job = Job(["-n", "2", RECORDS, "10", "3", "rally_mock=1,0,0,0,lag"])
    if job.wait(50) == 0:
        fail("a lag point without its sleep was taken:\n" + job.text())
    if "a lag point's sixth field is its sleep, 1 to 3600000 ms" not in job.text():
        fail("the refusal does not say why:\n" + job.text())


try:
    {"named": named, "clean": clean, "give_up": give_up, "lag_refused": lag_refused}[CASE]()
finally:
    cleanup()
