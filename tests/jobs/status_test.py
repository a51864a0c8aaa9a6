#!/usr/bin/env python3
"""status_test.py — rally-run's views of a running job (docs/status.md), tested
the way a person and a monitoring system see them, on real jobs of
rally-kmeans with a worker killed by SIGKILL from outside.

    python3 tests/jobs/status_test.py CASE BUILD_DIR

  job         --status, --events and `rally-run status` through a kill -9: every
              status.json and event line valid against its schema; the death,
              the recovery round, the restarted rank's incarnation and a new
              snapshot seen as they happen; /metrics says the summary line's
              counts; a rank stopped (SIGSTOP) is the one the job waits for
              (status.json, /metrics, `rally-run status`) until it goes on;
              200 idle connections and a client stopped mid-answer
              held open all along change nothing (one death, the failure-free
              digest)
  token       in a network namespace of the test's own (198.18.7.1 on a veth
              pair inside it, no route out): bound off loopback the server refuses
              without the run's token (401), takes it as a bearer header or a
              query parameter, keeps it in the job's directory (0600), and
              `rally-run status` needs it too
  progress    --progress on a pipe (plain lines, the last "N of N (100%)") and on
              a terminal (one line redrawn and erased, under script(1))
  prometheus  Debian's prometheus scrapes /metrics during a job with a kill -9;
              its query API shows the deaths and recoveries the summary says
  redundancy  what losing one host would take (docs/launch.md, "Failure
              domains"), on hosts made of rank groups (RALLY_HOST_GROUP=4): a
              host of 4 beside one of 1 with RALLY_LOCAL_REPLICA=1 is said at
              the start, in status.json's "redundancy" and in /metrics; a
              worker taken in (SIGUSR2) makes the second host 2 ranks, which
              is said again and shown; 3 hosts of 4 with the default 2
              replicas say nothing and show "covered"; --require-redundancy
              host refuses the first layout before any worker starts
  page        Debian's chromium (headless, driven through chromedriver) loads
              the page during a job: a rank stopped (SIGSTOP) shows "silent",
              not "running", and the rate falls and the ETA grows while the
              job stands still (status.json says the same); it shows the
              restarted rank (incarnation 2) and a snapshot committed after
              the kill as they happen; the screenshot stays in
              BUILD_DIR/status-page.png

Every case is bounded in time (alarm) and kills every process it started.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import jsonschema

CASE, BUILD = sys.argv[1], os.path.abspath(sys.argv[2])
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(BUILD, "rally-run")
KMEANS = os.path.join(BUILD, "rally-kmeans")
DATAGEN = os.path.join(BUILD, "rally-datagen")
with open(os.path.join(SRC, "docs", "status.schema.json")) as f:
    STATUS = jsonschema.Draft202012Validator(json.load(f))
with open(os.path.join(SRC, "docs", "events.schema.json")) as f:
    EVENTS = jsonschema.Draft202012Validator(json.load(f))

TMP = tempfile.mkdtemp(prefix="rally-status-test-")
GROUPS = []  # process groups to kill at the end
JOBS = []
CLEANUPS = []


def cleanup(*_):
    for pg in GROUPS:
        try:
            os.killpg(pg, signal.SIGKILL)
        except OSError:
            pass
    for f in reversed(CLEANUPS):
        try:
            f()
        except Exception:
            pass
    shutil.rmtree(TMP, ignore_errors=True)


def on_alarm(*_):
    raise TimeoutError("the case did not finish within its time")


signal.signal(signal.SIGALRM, on_alarm)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


def fail(msg):
    raise AssertionError(msg)


def data(rows=40000):
    path = os.path.join(TMP, "blobs.csv")
    if not os.path.exists(path):
        subprocess.run([DATAGEN, "--rows", str(rows), "--features", "8", "--centers", "4",
                        "--spread", "5", "--seed", "7", "--format", "csv", "-o", path],
                       check=True, capture_output=True)
    return path


def kmeans_args(iters, pause_ms):
    return [KMEANS, "--data", data(), "--data-opt", "csv_label=0", "-k", "4", "--iters",
            str(iters), "--fixed-iters", "--pause-ms", str(pause_ms)]


def digest(text):
    m = re.search(r"result: model_digest=([0-9a-f]+)", text)
    if not m:
        fail("no result line in:\n" + text[-3000:])
    return m.group(1)


def summary(err):
    m = re.search(r"summary: deaths=(\d+) recovered=(\d+) epochs=(\d+) restarts=(\d+)", err)
    if not m:
        fail("no summary line in:\n" + err[-3000:])
    return tuple(int(x) for x in m.groups())


class Job:
    """rally-run in a session of its own, its output in files."""

    def __init__(self, args, env=None, prefix=()):
        self.out = open(os.path.join(TMP, "job%d.out" % len(GROUPS)), "w+")
        self.err = open(os.path.join(TMP, "job%d.err" % len(GROUPS)), "w+")
        self.p = subprocess.Popen(list(prefix) + [RUN] + args, stdout=self.out, stderr=self.err,
                                  stdin=subprocess.DEVNULL, start_new_session=True,
                                  env=env)
        GROUPS.append(self.p.pid)
        JOBS.append(self)
        self.token = ""

    def text(self, which="err"):
        f = self.err if which == "err" else self.out
        f.flush()
        with open(f.name) as g:
            return g.read()

    def url(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = re.search(r"rally-run: status: (http://\S+)", self.text())
            if m:
                u = m.group(1)
                t = re.search(r"token=([0-9a-f]+)", u)
                self.token = t.group(1) if t else ""
                if not t and u.endswith("/"):
                    fail("the address ends with a slash, so $URL/metrics is //metrics: " + u)
                self.printed = u
                return u.split("?")[0].rstrip("/") + "/"
            if self.p.poll() is not None:
                fail("rally-run ended before serving:\n" + self.text())
            time.sleep(0.05)
        fail("rally-run printed no status address:\n" + self.text())

    def wait(self, timeout=120):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            fail("the job did not end within %d s:\n%s" % (timeout, self.text()))


def get(url, token="", raw=False, timeout=5):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
        return body if raw else json.loads(body)


def status(base, token=""):
    st = get(base + "status.json", token)
    errors = sorted(STATUS.iter_errors(st), key=str)
    if errors:
        fail("status.json against docs/status.schema.json: %s\n%s" % (errors[0], json.dumps(st)))
    return st


def until(what, pred, timeout=60, every=0.1, show=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(every)
    fail("timed out waiting for " + what + (": " + show() if show else ""))


def positions(st):
    """Each rank's (version, seq, inside, seconds there, heartbeat age), waiting_on."""
    return "waiting_on %s; %s" % (st["waiting_on"], "; ".join(
        "%s: v%s %s hb %s" % (r["rank"], r["version"], r["collective"],
                              r["heartbeat_age_seconds"]) for r in st["ranks"]))


def rank(st, r):
    return next(x for x in st["ranks"] if x["rank"] == r)


def running(st, n):
    return st["phase"] == "running" and sum(x["state"] == "running" for x in st["ranks"]) == n


def events(path):
    lines = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            ev = json.loads(line)
            errors = sorted(EVENTS.iter_errors(ev), key=str)
            if errors:
                fail("%s line %d against docs/events.schema.json: %s" % (path, n, errors[0]))
            lines.append(ev)
    return lines


METRIC = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? '
                    r'(-?[0-9.e+-]+|[+-]Inf|NaN)$')


def metrics(base, token=""):
    text = get(base + "metrics", token, raw=True).decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("#"):
            if not re.match(r"^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$", line):
                fail("a malformed comment line in /metrics: " + line)
            continue
        if not METRIC.match(line):
            fail("a malformed sample line in /metrics: " + line)
        name, value = line.rsplit(" ", 1)
        values[name] = float(value)
    return values


def failure_free(iters):
    p = subprocess.run([RUN, "-n", "4"] + kmeans_args(iters, 0), capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail("the failure-free run failed:\n" + p.stderr[-3000:])
    return digest(p.stdout)


# --- the cases ---------------------------------------------------------------


def case_job():
    want = failure_free(40)
    evpath = os.path.join(TMP, "events.jsonl")
    snaps = os.path.join(TMP, "snaps")
    job = Job(["-n", "4", "--status", "0", "--events", evpath, "--snapshot-dir", snaps,
               "--snapshot-every", "4", "--heartbeat-timeout-ms", "20000"] + kmeans_args(40, 150))
    base = job.url()
    host, port = base[len("http://"):].rstrip("/").rsplit(":", 1)
    # the printed address as a user extends it
    if b"rally_" not in get(job.printed + "/metrics", raw=True):
        fail("%s/metrics is not the metrics" % job.printed)
    # 200 clients that connect and stop mid-request, one that stops mid-answer
    idle = []
    for _ in range(200):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET /status.json HTTP/1.1\r\n")
        idle.append(s)
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    stalled.connect((host, int(port)))
    stalled.sendall(b"GET / HTTP/1.1\r\n\r\n")
    stalled.recv(100)
    st = until("4 ranks running and iteration 6", lambda: (lambda s: running(s, 4) and (
        s["progress"]["iteration"] or 0) >= 6 and s)(status(base)))
    if st["progress"]["total"] != 40 or not st["progress"]["values"]:
        fail("no progress reported by rally-kmeans: " + json.dumps(st["progress"]))
    # a rank that hangs (SIGSTOP) is the one the others wait for, until it goes on
    hung = rank(st, 1)["pid"]
    os.kill(hung, signal.SIGSTOP)
    try:
        st = until("the job waiting for the stopped rank 1", lambda: (lambda s: s["waiting_on"] == [1]
                   and rank(s, 1)["waited_on"] and s)(status(base)), timeout=15,
                   show=lambda: positions(status(base)))
        table = subprocess.run([RUN, "status", base], capture_output=True, text=True, timeout=30)
        line = [l for l in table.stdout.splitlines() if re.match(r"^\s+1\s", l)]
        if not line or "waits for it" not in line[0]:
            fail("rally-run status does not point at the stopped rank:\n" + table.stdout)
        if metrics(base).get('rally_rank_waited_on{rank="1"}') != 1:
            fail("/metrics does not mark the stopped rank")
    finally:
        os.kill(hung, signal.SIGCONT)
    st = until("the job going on", lambda: (lambda s: not s["waiting_on"] and s)(status(base)),
               timeout=30)
    victim = rank(st, 2)["pid"]
    snaps_before = {s["version"] for s in st["snapshots"] if s["state"] == "committed"}
    os.kill(victim, signal.SIGKILL)
    seen_recovering = False
    end = time.monotonic() + 60
    while time.monotonic() < end:
        st = status(base)
        seen_recovering |= st["phase"] == "recovering" or rank(st, 2)["state"] != "running"
        r2 = rank(st, 2)
        if st["totals"]["recovered"] == 1 and r2["incarnation"] == 2 and r2["state"] == "running":
            break
        time.sleep(0.05)
    else:
        fail("the restarted rank 2 never showed:\n" + json.dumps(st))
    if not seen_recovering:
        fail("no answer showed rank 2 down or a recovery round")
    if r2["pid"] == victim or r2["deaths"] != 1 or r2["restarts"] != 1:
        fail("rank 2 after its restart: " + json.dumps(r2))
    e = st["epochs"][-1]
    if e["rank"] != 2 or e["recovered_seconds"] is None or e["epoch"] != st["epoch"]:
        fail("the recovery round: " + json.dumps(e))
    m = metrics(base)
    for k, v in (("rally_worker_deaths_total", 1), ("rally_worker_deaths_recovered_total", 1),
                 ("rally_recovery_seconds_count", 1), ('rally_rank_incarnation{rank="2"}', 2),
                 ('rally_rank_deaths_total{rank="2"}', 1)):
        if m.get(k) != v:
            fail("/metrics: %s is %s, not %s" % (k, m.get(k), v))
    if m.get('rally_app_value{key="objective"}') is None or m.get("rally_app_iterations") != 40:
        fail("/metrics lacks the application's values: %s" % sorted(m))
    table = subprocess.run([RUN, "status", base], capture_output=True, text=True, timeout=30)
    if table.returncode != 0 or "rally-kmeans" not in table.stdout:
        fail("rally-run status: %d\n%s%s" % (table.returncode, table.stdout, table.stderr))
    rows = [l.split() for l in table.stdout.splitlines() if re.match(r"^\s+\d+\s", l)]
    if len(rows) != 4 or rows[2][0] != "2" or rows[2][3] != "2":
        fail("rally-run status's rank table:\n" + table.stdout)
    st = until("a snapshot committed after the kill", lambda: (lambda s: any(
        x["state"] == "committed" and x["version"] not in snaps_before for x in s["snapshots"])
        and s)(status(base)))
    if job.wait() != 0:
        fail("the job failed:\n" + job.text())
    if digest(job.text("out")) != want:
        fail("the digest differs from the failure-free run's")
    if summary(job.text()) != (1, 1, 1, 1):
        fail("the summary says more than one death (the clients held up the loop?):\n" +
             job.text()[-2000:])
    stalled.close()
    for s in idle:
        s.close()
    evs = events(evpath)
    kinds = [e["event"] for e in evs]
    if kinds[0] != "start" or kinds[-1] != "end" or evs[-1]["deaths"] != 1:
        fail("events: " + " ".join(kinds))
    at = {}
    for i, e in enumerate(evs):
        if e.get("rank") == 2 or e["event"] in ("recovered", "epoch"):
            at.setdefault(e["event"], i)
    for k in ("death", "epoch", "restart", "recovered"):
        if k not in at:
            fail("no %s event: %s" % (k, " ".join(kinds)))
    if not at["death"] < at["restart"] < at["recovered"] or not at["epoch"] < at["recovered"]:
        fail("events out of order: " + " ".join(kinds))
    if sum(e["event"] == "join" and e["rank"] == 2 for e in evs) != 2:
        fail("rank 2 should join twice: " + " ".join(kinds))
    if not any(e["event"] == "snapshot" and e["state"] == "committed" for e in evs):
        fail("no snapshot event")
    reports = [e for e in evs if e["event"] == "report" and e["key"] == "objective"]
    if len({e["iteration"] for e in reports}) < 30:
        fail("too few objective reports: %d" % len(reports))


def netns(name, addr):
    subprocess.run(["ip", "netns", "add", name], check=True)
    CLEANUPS.append(lambda: subprocess.run(["ip", "netns", "del", name], capture_output=True))
    for cmd in (["link", "set", "lo", "up"], ["link", "add", "v0", "type", "veth", "peer", "name",
                                                 "v1"],
                ["addr", "add", addr + "/24", "dev", "v0"], ["link", "set", "v0", "up"],
                ["link", "set", "v1", "up"]):
        subprocess.run(["ip", "-n", name] + cmd, check=True)


def case_token():
    name = "rally-status-%d" % os.getpid()
    netns(name, "198.18.7.1")
    env = dict(os.environ, TMPDIR=TMP)
    job = Job(["-n", "2", "--status", "198.18.7.1:0"] + kmeans_args(30, 200), env=env,
              prefix=["ip", "netns", "exec", name])
    base = job.url()
    if not job.token or len(job.token) != 32:
        fail("no token printed:\n" + job.text())
    inside = ["ip", "netns", "exec", name]

    def ask(path, header=None):
        cmd = inside + ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", base + path]
        if header:
            cmd[len(inside) + 1:len(inside) + 1] = ["-H", header]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout

    for path in ("", "status.json", "metrics"):
        if ask(path) != "401":
            fail("/%s without the token answered %s" % (path, ask(path)))
    if ask("status.json", "Authorization: Bearer " + "0" * 32) != "401":
        fail("a wrong token was taken")
    if ask("status.json?token=" + job.token[:-1]) != "401":
        fail("a token one character short was taken")
    if ask("status.json", "Authorization: Bearer " + job.token) != "200":
        fail("the bearer token was refused")
    for path in ("?token=", "status.json?token=", "metrics?token="):
        if ask(path + job.token) != "200":
            fail("/%s with the token was refused" % path)
    files = [os.path.join(d, f) for d, _, fs in os.walk(TMP) for f in fs if f == "status-token"]
    if len(files) != 1 or os.stat(files[0]).st_mode & 0o077:
        fail("the token file: %s" % files)
    with open(files[0]) as f:
        if f.read().strip() != job.token:
            fail("the token file holds another token")
    no = subprocess.run(inside + [RUN, "status", base], capture_output=True, text=True, timeout=30)
    if no.returncode != 1 or "token" not in no.stderr:
        fail("rally-run status without the token: %d %s" % (no.returncode, no.stderr))
    yes = subprocess.run(inside + [RUN, "status", "--token", job.token, base], capture_output=True,
                         text=True, timeout=30)
    if yes.returncode != 0 or "RANK" not in yes.stdout:
        fail("rally-run status with the token: %d %s%s" % (yes.returncode, yes.stdout, yes.stderr))
    if job.wait() != 0:
        fail("the job failed:\n" + job.text())
    # on loopback no token is asked for
    job = Job(["-n", "2", "--status", "127.0.0.1:0"] + kmeans_args(10, 100))
    base = job.url()
    if job.token:
        fail("a token on loopback")
    status(base)
    job.wait()


def case_progress():
    job = Job(["-n", "2", "--progress"] + kmeans_args(12, 150))
    if job.wait() != 0:
        fail("the job failed:\n" + job.text())
    lines = re.findall(r"^rally-run: progress: (.*)$", job.text(), re.M)
    if len(lines) < 2 or not lines[-1].startswith("iteration 12 of 12 (100%)") or \
            "objective" not in lines[-1]:
        fail("progress lines on a pipe:\n" + job.text())
    if "\033[K" in job.text():
        fail("terminal codes on a pipe")
    # a terminal: script(1) gives the job one
    log = os.path.join(TMP, "tty.log")
    cmd = " ".join([RUN, "-n", "2", "--progress"] + kmeans_args(12, 150) + [">/dev/null"])
    p = subprocess.run(["script", "-qfec", cmd, log], capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL, start_new_session=True)
    with open(log, "rb") as f:
        tty = f.read().decode(errors="replace")
    if p.returncode != 0:
        fail("the job on a terminal failed:\n" + tty)
    draws = re.findall(r"\r\033\[K(iteration \d+ of 12[^\r\n]*)", tty)
    if len(draws) < 2 or "rally-run: progress: iteration 12 of 12 (100%)" not in tty:
        fail("the progress line on a terminal:\n%r" % tty[-2000:])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def case_prometheus():
    job = Job(["-n", "4", "--status", "0"] + kmeans_args(80, 150))
    base = job.url()
    target = base[len("http://"):].rstrip("/")
    conf = os.path.join(TMP, "prometheus.yml")
    with open(conf, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: rally\n    static_configs:\n"
                "      - targets: ['%s']\n" % target)
    web = "127.0.0.1:%d" % free_port()
    prom = subprocess.Popen(["prometheus", "--config.file=" + conf,
                             "--storage.tsdb.path=" + os.path.join(TMP, "tsdb"),
                             "--web.listen-address=" + web],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(TMP, "prom.log"),
                                                                   "w"),
                            start_new_session=True)
    GROUPS.append(prom.pid)

    def query(q):
        try:
            r = get("http://%s/api/v1/query?query=%s" % (web, urllib.request.quote(q)))
        except (urllib.error.URLError, ConnectionError, OSError):
            return None
        res = r["data"]["result"]
        return float(res[0]["value"][1]) if res else None

    until("prometheus scraping the job", lambda: query('up{job="rally"}') == 1, timeout=60,
          every=0.5)
    st = until("4 ranks running", lambda: (lambda s: running(s, 4) and s)(status(base)))
    os.kill(rank(st, 1)["pid"], signal.SIGKILL)
    until("the recovery", lambda: status(base)["totals"]["recovered"] == 1)
    until("prometheus seeing the death and the recovery",
          lambda: query("rally_worker_deaths_total") == 1 and
          query("rally_worker_deaths_recovered_total") == 1 and
          query("rally_recovery_epochs_total") == 1 and
          query("rally_recovery_seconds_count") == 1, timeout=30, every=0.5)
    restarted = query('rally_rank_incarnation{rank="1"}')
    if job.wait() != 0:
        fail("the job failed:\n" + job.text())
    deaths, recovered, epochs, restarts = summary(job.text())
    prom_said = (query("max_over_time(rally_worker_deaths_total[5m])"),
                 query("max_over_time(rally_worker_deaths_recovered_total[5m])"),
                 query("max_over_time(rally_recovery_epochs_total[5m])"),
                 query("max_over_time(rally_worker_restarts_total[5m])"))
    if prom_said != (deaths, recovered, epochs, restarts) or restarted != 2:
        fail("prometheus says %s (incarnation %s), the summary line %s" %
             (prom_said, restarted, (deaths, recovered, epochs, restarts)))


def case_page():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    snaps = os.path.join(TMP, "snaps")
    job = Job(["-n", "4", "--status", "0", "--snapshot-dir", snaps, "--snapshot-every", "5",
               "--heartbeat-timeout-ms", "30000"] + kmeans_args(60, 200))
    base = job.url()
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", "--user-data-dir=" + os.path.join(TMP, "chrome")):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    CLEANUPS.append(drv.quit)
    drv.get(base)
    # the page redraws once a second, replacing its elements: read the DOM
    # in one script each time, never through a handle kept across a redraw
    wait = WebDriverWait(drv, 60, poll_frequency=0.1,
                         ignored_exceptions=[StaleElementReferenceException])

    def js(expr):
        return drv.execute_script("return " + expr)

    def cell(r):
        return js('(e => e && {state: e.dataset.state, inc: e.dataset.incarnation, text: '
                  'e.innerText})(document.querySelector(\'#ranks .rank[data-rank="%d"]\'))' % r)

    def committed():
        return set(js('[...document.querySelectorAll(\'#snapshots tr[data-state="committed"]\')]'
                      '.map(e => e.dataset.version)'))

    def count(sel):
        return js("document.querySelectorAll('%s').length" % sel)

    def rate_eta():  # the header's "· 4.71 it/s · ETA 9.5 s" (or "1 min 5 s"), as numbers
        m = re.search(r"([0-9.e+]+) it/s · ETA (?:(\d+) min )?([0-9.]+) s$",
                      js("document.getElementById('prog').textContent"))
        return m and (float(m.group(1)), int(m.group(2) or 0) * 60 + float(m.group(3)))

    wait.until(lambda d: count('#ranks .rank[data-state="running"]') == 4 and rate_eta())
    # a rank stopped: the page says so, and the job's rate and ETA follow the stall
    pid = int(re.search(r"pid (\d+)", cell(1)["text"]).group(1))
    os.kill(pid, signal.SIGSTOP)
    try:
        # the newest iteration reported, once the others wait for rank 1
        it = until("the reports to stop", lambda: (lambda a, b: a == b and a)(
            status(base)["progress"]["iteration"],
            (time.sleep(1), status(base)["progress"]["iteration"])[1]), timeout=30)
        rate0, eta0 = wait.until(lambda d: rate_eta())
        wait.until(lambda d: cell(1)["state"] == "silent")
        if count('#ranks .rank[data-state="running"]') != 3:
            fail("the other ranks' cells: %s" % [cell(r) for r in range(4)])
        wait.until(lambda d: (lambda re_: re_ and re_[0] < rate0 and re_[1] > eta0)(rate_eta()))
        st = status(base)
        if rank(st, 1)["state"] != "silent" or st["progress"]["iteration"] != it or \
                st["progress"]["rate_per_second"] >= rate0:
            fail("status.json during the stall: %s" % json.dumps(st["progress"]))
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:  # the tracker fenced it (the case failed already)
            pass
    wait.until(lambda d: count('#ranks .rank[data-state="running"]') == 4)
    wait.until(lambda d: committed())
    before = committed()
    pid = int(re.search(r"pid (\d+)", cell(2)["text"]).group(1))
    os.kill(pid, signal.SIGKILL)
    wait.until(lambda d: (lambda c: c and c["inc"] == "2" and c["state"] == "running")(cell(2)))
    if "incarnation 2" not in cell(2)["text"]:
        fail("rank 2's cell: " + cell(2)["text"])
    wait.until(lambda d: committed() - before)
    wait.until(lambda d: count('#timeline circle[data-event="death"]') and
               count('#timeline circle[data-event="recovered"]'))
    if int(js("document.querySelector('#plot polyline').dataset.points")) < 5:
        fail("the progress plot has too few points")
    if js("document.getElementById('recovered').textContent") != "1":
        fail("the header's recovered count: " + js("document.getElementById('recovered').textContent"))
    shot = os.path.join(BUILD, "status-page.png")
    drv.save_screenshot(shot)
    if os.path.getsize(shot) < 10000:
        fail("the screenshot is empty")
    drv.quit()
    CLEANUPS.remove(drv.quit)
    if job.wait() != 0:
        fail("the job failed:\n" + job.text())


def case_redundancy():
    env = dict(os.environ, RALLY_HOST_GROUP="4", RALLY_LOCAL_REPLICA="1")
    big = "losing the host of ranks 0-3 (4 of %d ranks, rally_host_group=4) would lose the " \
          "local models of %d ranks: every copy of them is on it (rally_local_replica=1: %d " \
          "would cover it)"
    # refused before anything starts: no status address, no worker
    p = subprocess.run([RUN, "-n", "5", "--require-redundancy", "host", "--status", "0"] +
                       kmeans_args(2, 0), capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 2 or "rally-run: " + big % (5, 3, 4) not in p.stderr or \
            "not started: losing that host" not in p.stderr or "status:" in p.stderr:
        fail("--require-redundancy host did not refuse the job (%d):\n%s" % (p.returncode, p.stderr))
    # said at the start, shown; said again once a worker taken in changed it
    job = Job(["-n", "5", "--max-workers", "6", "--status", "0"] + kmeans_args(200, 50), env=env)
    base = job.url()
    st = until("5 ranks running", lambda: (lambda s: running(s, 5) and s)(status(base)))
    if "rally-run: " + big % (5, 3, 4) not in job.text():
        fail("the start did not say the host not covered")
    want = {"level": "host", "covered": False, "local_replica": 1, "xor_set": None,
            "result_copies": None, "uncovered": [{"level": "host", "domain": "ranks 0-3", "ranks": 4, "lost_local": 3,
                           "lost_pieces": 0}]}
    if st["redundancy"] != want:
        fail("status.json's redundancy: %s" % json.dumps(st["redundancy"]))
    if metrics(base).get('rally_redundancy_uncovered_domains{level="host"}') != 1:
        fail("/metrics does not count the host not covered")
    # a few checkpoints in, as elastic_test's grow case takes one in
    until("iteration 5", lambda: (status(base)["progress"]["iteration"] or 0) >= 5)
    os.kill(job.p.pid, signal.SIGUSR2)
    until("the worker taken in", lambda: status(base)["world"] == 6, timeout=90)
    again = "rally-run: with 6 workers now, " + big % (6, 2, 3)
    until("it said again", lambda: again in job.text(), timeout=30)
    want["uncovered"][0]["lost_local"] = 2
    if status(base)["redundancy"] != want:
        fail("status.json's redundancy after the growth: %s" % json.dumps(status(base)["redundancy"]))
    if job.text().count("would lose") != 2:
        fail("said more than at the start and once again:\n" + job.text())
    os.killpg(job.p.pid, signal.SIGTERM)
    job.wait()
    # covered: 3 hosts of 4, 2 replicas
    env["RALLY_LOCAL_REPLICA"] = "2"
    job = Job(["-n", "12", "--require-redundancy", "host", "--status", "0"] + kmeans_args(200, 50),
              env=env)
    base = job.url()
    st = until("12 ranks running", lambda: (lambda s: running(s, 12) and s)(status(base)))
    if st["redundancy"] != {"level": "host", "covered": True, "local_replica": 2,
                            "xor_set": None, "result_copies": None, "uncovered": []}:
        fail("status.json's redundancy when covered: %s" % json.dumps(st["redundancy"]))
    if metrics(base).get('rally_redundancy_uncovered_domains{level="host"}') != 0:
        fail("/metrics counts a host not covered")
    if "would lose" in job.text():
        fail("a covered layout was said not covered:\n" + job.text())
    os.killpg(job.p.pid, signal.SIGTERM)
    job.wait()


CASES = {"job": case_job, "token": case_token, "progress": case_progress,
         "prometheus": case_prometheus, "page": case_page, "redundancy": case_redundancy}

if __name__ == "__main__":
    signal.alarm(280)
    try:
        CASES[CASE]()
    except BaseException:
        for job in JOBS:  # what rally-run said, for the reader of the failure
            sys.stderr.write("--- %s (stderr, last lines):\n%s\n" % (
                " ".join(job.p.args[:4]), job.text()[-4000:]))
        raise
    finally:
        cleanup()
    print("status_test %s: passed" % CASE)
