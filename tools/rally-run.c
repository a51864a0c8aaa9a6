/*
 * rally-run — starts N workers of a rally job on this host and watches them.
 *
 *     rally-run -n N [options] [--] prog args...
 *
 * One single-threaded poll loop (run_loop) owns everything: the tracker
 * (src/tracker/server.h) embedded in-process, a signalfd for SIGCHLD, SIGINT
 * and SIGTERM (blocked, so they arrive only there), and the stdout/stderr
 * pipes of every worker.  Each worker is a struct kid that can be spawned
 * again (a restart): fork, then in the child its own process group,
 * PR_SET_PDEATHSIG so it dies with us, stdin from /dev/null, the pipes as
 * stdout/stderr, RALLY_TRACKER / RALLY_SECRET_FILE / RALLY_TASK_ID in the
 * environment and execvp.  A close-on-exec pipe carries errno back when exec
 * fails.  The job's secret lives in a fresh 0700 directory, removed at exit.
 *
 * Output lines are prefixed "[rank] " (task id i is rank i: the tracker ranks
 * by task id).  A worker that dies (non-zero exit, a signal, exit 0 without
 * rally_finalize) after the first GO, while no rank has finalized, is
 * restarted with the same rank, up to --max-restarts times per rank: we tell
 * the tracker (rally__tracker_rank_died), which fences the old incarnation
 * and assembles a new epoch around the new process.  When the tracker fences
 * a rank whose process still runs (no heartbeat, replaced), TEV_RANK_FAILED
 * makes us SIGKILL its group after FENCE_GRACE_MS; its death then counts like
 * any other.  Any other failure (before the first GO, restarts exhausted,
 * --max-restarts 0, the tracker's own verdict) makes us ABORT the job through
 * the tracker, give the others --grace-ms to leave and then SIGKILL their
 * groups; the exit status is 1 with one line naming the first failure.
 * SIGINT/SIGTERM are passed to every worker's group, with the same
 * escalation, and we exit 128+signal.  The last line on stderr is always the
 * summary (deaths, deaths recovered, recovery epochs, restarts, deaths per
 * rank).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/auth.h"
#include "net/sock.h"
#include "tracker/proto.h"
#include "cli.h"
#include "tracker/server.h"
#include "util/clock.h"

#define LINE_MAX_NBYTES 65536
#define DRAIN_MS 1000 /* how long pipes may stay open after every worker is reaped */
#define FENCE_GRACE_MS 500 /* a fenced worker that still runs gets this long to exit */

struct line {
    char b[LINE_MAX_NBYTES];
    size_t n;
};

struct kid {
    int rank;  /* = task id */
    pid_t pid; /* 0: not running */
    int fd[2]; /* stdout, stderr pipes; -1 once closed */
    struct line line[2];
    int finalized; /* the tracker saw its SHUTDOWN */
    int failed;
    char why[512]; /* how it failed, "" when it did not */
    int deaths, restarts;
    int64_t fence_kill_at; /* the tracker fenced it: SIGKILL then (RALLY__NEVER: no) */
    char fenced[256];      /* why the tracker fenced it, "" when it did not */
    int fence_killed;      /* we sent that SIGKILL */
};

struct run {
    int world;
    const char *host;
    int port;
    int64_t startup_ms, grace_ms, heartbeat_ms;
    int max_restarts;
    int ndeaths, nrecoveries, nrestarts;
    int nrecovered, unrecovered; /* deaths followed by a recovery; deaths since the last */
    char **argv;
    struct kid *kids;
    int nlive; /* spawned and not yet reaped */
    struct rally__tracker *t;
    int sfd;
    char dir[PATH_MAX], secret[PATH_MAX + 16], tracker_addr[RALLY__HOST_MAX + 16];
    int first;         /* index of the first failed kid, -1 */
    int tracker_first; /* the tracker failed before any kid did */
    int stop_sig;      /* the SIGINT/SIGTERM we got, 0 */
    int64_t kill_at, drain_until;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rally-run -n N [options] [--] prog [args...]\n"
            "Runs N workers of a rally job on this host, with a tracker inside.\n"
            "\n"
            "  -n, --workers N            number of workers (1..%d)\n"
            "      --host H               tracker bind address (default 127.0.0.1)\n"
            "      --port P               tracker port (default 0: any free port)\n"
            "      --startup-timeout-ms T every worker must join (and a restarted one\n"
            "                             rejoin) within T ms (default 60000)\n"
            "      --grace-ms G           after a failure or a signal, workers get G ms to exit\n"
            "                             before SIGKILL (default 3000)\n"
            "      --max-restarts K       restart each rank at most K times (default 3; 0: the\n"
            "                             first worker death fails the job)\n"
            "      --heartbeat-timeout-ms T  a worker that sent heartbeats and then falls silent\n"
            "                             for T ms is killed and restarted (default 10000; 0: off)\n"
            "  -h, --help                 this text\n"
            "\n"
            "Workers get RALLY_TRACKER, RALLY_SECRET_FILE and RALLY_TASK_ID; their output\n"
            "lines are prefixed with \"[rank] \".  A worker that dies after the job started\n"
            "(and before any rank finalized) is started again with the same rank and\n"
            "environment; the others wait and recover.  Exit status: 0 when every worker\n"
            "exited 0 after rally_finalize; 1 otherwise (one line on stderr names the first\n"
            "failure); 127 when prog cannot be run; 2 on a usage error; 128+S after signal S.\n"
            "The last line on stderr is a summary:\n"
            "  rally-run: summary: deaths=D recovered=R epochs=E restarts=S per-rank-deaths=0:0,1:2,...\n"
            "  (recovered: deaths after which the job got back in step; epochs: recoveries,\n"
            "  one per re-wiring, which can serve several deaths at once)\n",
            RALLY__WORLD_MAX);
}

/* --- output ---------------------------------------------------------------- */

static void put_lines(FILE *f, int rank, const char *s, size_t n, int final)
{
    while (n > 0) {
        const char *nl = memchr(s, '\n', n);
        size_t k = nl ? (size_t)(nl - s) : n;
        if (!nl && !final)
            return;
        fprintf(f, "[%d] %.*s\n", rank, (int)k, s);
        k += nl != NULL;
        s += k;
        n -= k;
    }
}

/* Reads what the pipe holds; complete lines go out prefixed, a partial one
 * waits (or goes out at EOF, or when it fills the buffer). */
static void drain(struct kid *k, int which)
{
    struct line *l = &k->line[which];
    FILE *f = which ? stderr : stdout;
    for (;;) {
        ssize_t m = read(k->fd[which], l->b + l->n, sizeof l->b - l->n);
        if (m < 0 && errno == EINTR)
            continue;
        if (m < 0 && errno == EAGAIN)
            return;
        if (m <= 0) {
            put_lines(f, k->rank, l->b, l->n, 1);
            l->n = 0;
            close(k->fd[which]);
            k->fd[which] = -1;
            return;
        }
        l->n += (size_t)m;
        char *last = memrchr(l->b, '\n', l->n);
        size_t done = last ? (size_t)(last - l->b) + 1 : l->n == sizeof l->b ? l->n : 0;
        put_lines(f, k->rank, l->b, done, 1);
        memmove(l->b, l->b + done, l->n - done);
        l->n -= done;
    }
}

/* --- the tracker's callbacks ---------------------------------------------- */

static void on_print(void *arg, int rank, const char *msg)
{
    put_lines(stdout, rank, msg, strlen(msg), 1);
}

static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    struct run *r = arg;
    if (ev->kind == RALLY__TEV_LOG || ev->kind == RALLY__TEV_PROGRESS)
        fprintf(stderr, "rally-run: tracker: %s\n", ev->text);
    else if (ev->kind == RALLY__TEV_FINALIZED) {
        int i = atoi(ev->task_id);
        if (i >= 0 && i < r->world)
            r->kids[i].finalized = 1;
    } else if (ev->kind == RALLY__TEV_RANK_FAILED) {
        if (ev->rank >= 0 && ev->rank < r->world && r->kids[ev->rank].pid > 0) {
            struct kid *k = &r->kids[ev->rank];
            snprintf(k->fenced, sizeof k->fenced, "%s", ev->text);
            k->fence_kill_at = rally__now_ms() + FENCE_GRACE_MS;
        }
    } else if (ev->kind == RALLY__TEV_RECOVERED) {
        char where[96] = "no worker survived";
        if (ev->has_position)
            rally__position_str(ev->position, where, sizeof where);
        r->nrecoveries++;
        r->nrecovered += r->unrecovered;
        r->unrecovered = 0;
        fprintf(stderr, "rally-run: recovered: epoch %u, job back in step %.2f s after the failure (%s)\n",
                ev->epoch, ev->seconds, where);
    }
}

/* --- workers --------------------------------------------------------------- */

static void child(struct run *r, struct kid *k, const int out[2], const int err[2], int report,
                  pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the launcher died before prctl took effect */
        _exit(127);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
        goto fail;
    /* Nothing else crosses exec, not even what our own parent leaked to us. */
    if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
        for (int fd = 3; fd < 1024; fd++)
            if (fd != report)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
    char id[16];
    snprintf(id, sizeof id, "%d", k->rank);
    if (setenv("RALLY_TRACKER", r->tracker_addr, 1) || setenv("RALLY_SECRET_FILE", r->secret, 1) ||
        setenv("RALLY_TASK_ID", id, 1))
        goto fail;
    execvp(r->argv[0], r->argv);
fail:;
    int e = errno;
    ssize_t w = write(report, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* Starts k; returns 0, or the errno of a failed exec / fork. */
static int spawn(struct run *r, struct kid *k)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1}, rep[2] = {-1, -1}, rc = 0;
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
        rc = errno;
        goto cleanup;
    }
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        rc = errno;
        goto cleanup;
    }
    if (pid == 0)
        child(r, k, out, err, rep[1], parent);
    setpgid(pid, pid); /* both sides, so a signal never misses the group */
    k->pid = pid;
    k->finalized = k->failed = 0;
    k->why[0] = '\0';
    r->nlive++;
    close(rep[1]);
    rep[1] = -1;
    int e;
    ssize_t m;
    do
        m = read(rep[0], &e, sizeof e);
    while (m < 0 && errno == EINTR);
    if (m == (ssize_t)sizeof e)
        rc = e; /* the child exits 127; reaping finds it */
    for (int i = 0; i < 2; i++) {
        int *p = i ? err : out;
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        k->fd[i] = p[0];
        k->line[i].n = 0;
        close(p[1]);
        p[0] = p[1] = -1;
    }
cleanup:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
        if (rep[i] >= 0)
            close(rep[i]);
    }
    return rc;
}

static void signal_all(struct run *r, int sig)
{
    for (int i = 0; i < r->world; i++)
        if (r->kids[i].pid > 0)
            kill(-r->kids[i].pid, sig);
}

static void start_grace(struct run *r)
{
    int64_t at = rally__now_ms() + r->grace_ms;
    if (at < r->kill_at)
        r->kill_at = at;
}

/* Reads what k's pipes still hold and closes them (before a restart: the
 * process is gone, what it wrote is in the pipes). */
static void flush_pipes(struct kid *k)
{
    for (int w = 0; w < 2; w++) {
        if (k->fd[w] >= 0)
            drain(k, w);
        if (k->fd[w] >= 0) {
            put_lines(w ? stderr : stdout, k->rank, k->line[w].b, k->line[w].n, 1);
            k->line[w].n = 0;
            close(k->fd[w]);
            k->fd[w] = -1;
        }
    }
}

static void fail_first(struct run *r, struct kid *k)
{
    k->failed = 1;
    if (r->first < 0 && !r->stop_sig) {
        r->first = k->rank;
        if (r->t)
            rally__tracker_abort(r->t, RALLY_EPEER, "%s", k->why);
        start_grace(r);
    }
}

/* "rank 3 was killed by signal 9", "rank 3 exited with status 2". */
static void why_of(struct kid *k, const char *cause)
{
    snprintf(k->why, sizeof k->why, "rank %d %s%s", k->rank,
             strncmp(cause, "killed", 6) == 0 ? "was " : "", cause);
}

/* k died of cause while the job runs: restart it, or fail the job. */
static void died(struct run *r, struct kid *k, const char *cause)
{
    r->ndeaths++;
    r->unrecovered++;
    k->deaths++;
    if (r->max_restarts > 0 && rally__tracker_recoverable(r->t)) {
        if (k->restarts >= r->max_restarts) {
            snprintf(k->why, sizeof k->why, "rank %d died (%s) and its restarts are exhausted (%d of %d used)",
                     k->rank, cause, k->restarts, r->max_restarts);
            fail_first(r, k);
            return;
        }
        k->restarts++;
        r->nrestarts++;
        fprintf(stderr, "rally-run: rank %d died (%s); restarting it (restart %d of %d)\n", k->rank,
                cause, k->restarts, r->max_restarts);
        rally__tracker_rank_died(r->t, k->rank, cause);
        flush_pipes(k);
        int err = spawn(r, k);
        if (err != 0) {
            snprintf(k->why, sizeof k->why, "cannot restart rank %d: %s", k->rank, strerror(err));
            fail_first(r, k);
        }
        return;
    }
    why_of(k, cause);
    fail_first(r, k);
}

static void reap(struct run *r)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        struct kid *k = NULL;
        for (int i = 0; i < r->world && !k; i++)
            if (r->kids[i].pid == pid)
                k = &r->kids[i];
        if (k == NULL)
            continue;
        kill(-pid, SIGKILL); /* whatever it left behind in its group */
        k->pid = 0;
        k->fence_kill_at = RALLY__NEVER;
        r->nlive--;
        if (r->nlive == 0)
            r->drain_until = rally__now_ms() + DRAIN_MS;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && k->finalized)
            continue;
        char cause[320];
        if (WIFSIGNALED(st) && k->fence_killed && WTERMSIG(st) == SIGKILL)
            snprintf(cause, sizeof cause, "killed by signal 9 after the tracker fenced it: %s",
                     k->fenced);
        else if (WIFSIGNALED(st))
            snprintf(cause, sizeof cause, "killed by signal %d", WTERMSIG(st));
        else if (WEXITSTATUS(st) != 0)
            snprintf(cause, sizeof cause, "exited with status %d", WEXITSTATUS(st));
        else
            snprintf(cause, sizeof cause, "exited 0 without rally_finalize");
        k->fence_killed = 0;
        k->fenced[0] = '\0';
        int frank, tst = rally__tracker_state(r->t, NULL, &frank);
        if (k->finalized) {
            /* it finished its part: a bad exit fails the job, but is no death */
            k->failed = 1;
            snprintf(k->why, sizeof k->why, "rank %d %s after rally_finalize", k->rank, cause);
            continue;
        }
        if (r->first < 0 && !r->stop_sig && tst == RALLY__TRACKER_RUNNING) {
            died(r, k, cause);
        } else {
            /* Counted when its loss failed the job (the tracker saw it first),
             * not when it left after the job had failed. */
            if (tst == RALLY__TRACKER_FAILED && frank == k->rank && !r->stop_sig && !k->failed) {
                r->ndeaths++;
                k->deaths++;
            }
            k->failed = 1;
            why_of(k, cause);
        }
    }
}

static void on_signals(struct run *r)
{
    struct signalfd_siginfo si;
    while (read(r->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            reap(r);
            continue;
        }
        if (!r->stop_sig) {
            r->stop_sig = sig;
            if (r->t)
                rally__tracker_abort(r->t, RALLY_EPEER, "rally-run was stopped by signal %d", sig);
            start_grace(r);
        }
        signal_all(r, sig);
    }
    reap(r); /* SIGCHLDs coalesce; a reap too many costs nothing */
}

/* --- the loop -------------------------------------------------------------- */

static int run_loop(struct run *r)
{
    size_t cap = 1 + 2 * (size_t)r->world;
    struct pollfd *p = NULL;
    struct kid **owner = calloc(cap, sizeof *owner);
    int *which = calloc(cap, sizeof *which);
    int rc = 0;
    if (owner == NULL || which == NULL) {
        rc = -1;
        goto cleanup;
    }
    for (;;) {
        int open_pipes = 0;
        for (int i = 0; i < r->world; i++)
            open_pipes += (r->kids[i].fd[0] >= 0) + (r->kids[i].fd[1] >= 0);
        if (r->nlive == 0 && (open_pipes == 0 || rally__now_ms() >= r->drain_until))
            break;
        size_t want = cap + rally__tracker_npoll(r->t);
        struct pollfd *np = realloc(p, want * sizeof *p);
        if (np == NULL) {
            rc = -1;
            goto cleanup;
        }
        p = np;
        size_t n = 0;
        p[n++] = (struct pollfd){.fd = r->sfd, .events = POLLIN};
        for (int i = 0; i < r->world; i++)
            for (int w = 0; w < 2; w++)
                if (r->kids[i].fd[w] >= 0) {
                    owner[n] = &r->kids[i];
                    which[n] = w;
                    p[n++] = (struct pollfd){.fd = r->kids[i].fd[w], .events = POLLIN};
                }
        size_t nt = rally__tracker_fill(r->t, p + n, want - n);
        int64_t deadline = rally__tracker_deadline(r->t);
        if (r->kill_at < deadline)
            deadline = r->kill_at;
        for (int i = 0; i < r->world; i++)
            if (r->kids[i].fence_kill_at < deadline)
                deadline = r->kids[i].fence_kill_at;
        if (r->nlive == 0 && r->drain_until < deadline)
            deadline = r->drain_until;
        if (poll(p, n + nt, rally__ms_left(deadline)) < 0 && errno != EINTR) {
            rc = -1;
            goto cleanup;
        }
        if (p[0].revents)
            on_signals(r);
        for (size_t i = 1; i < n; i++)
            if (p[i].revents && owner[i]->fd[which[i]] == p[i].fd)
                drain(owner[i], which[i]);
        rally__tracker_handle(r->t, p + n, nt);
        if (rally__tracker_state(r->t, NULL, NULL) == RALLY__TRACKER_FAILED) {
            if (r->first < 0 && !r->stop_sig && !r->tracker_first)
                r->tracker_first = 1;
            start_grace(r);
        }
        for (int i = 0; i < r->world; i++) {
            struct kid *k = &r->kids[i];
            if (k->pid > 0 && rally__now_ms() >= k->fence_kill_at) {
                kill(-k->pid, SIGKILL);
                k->fence_killed = 1;
                k->fence_kill_at = RALLY__NEVER;
            }
        }
        if (rally__now_ms() >= r->kill_at) {
            signal_all(r, SIGKILL);
            r->kill_at = RALLY__NEVER;
        }
        fflush(stdout);
        fflush(stderr);
    }
cleanup:
    free(p);
    free(owner);
    free(which);
    return rc;
}

/* Stops and reaps every worker still running (error paths). */
static void kill_all(struct run *r)
{
    signal_all(r, SIGKILL);
    while (r->nlive > 0) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno != EINTR)
            break;
        for (int i = 0; pid > 0 && i < r->world; i++)
            if (r->kids[i].pid == pid) {
                r->kids[i].pid = 0;
                r->nlive--;
            }
    }
}

static int verdict(struct run *r)
{
    const char *sentence;
    int rank;
    int st = rally__tracker_state(r->t, &sentence, &rank);
    if (r->stop_sig) {
        fprintf(stderr, "rally-run: stopped by signal %d (%s)\n", r->stop_sig,
                strsignal(r->stop_sig));
        return 128 + r->stop_sig;
    }
    if (st == RALLY__TRACKER_FAILED && rank >= 0 && rank < r->world && r->kids[rank].failed) {
        fprintf(stderr, "rally-run: %s\n", r->kids[rank].why);
        return 1;
    }
    if (r->tracker_first) {
        fprintf(stderr, "rally-run: job aborted: %s\n", sentence);
        return 1;
    }
    if (r->first >= 0) {
        fprintf(stderr, "rally-run: %s\n", r->kids[r->first].why);
        return 1;
    }
    for (int i = 0; i < r->world; i++)
        if (r->kids[i].failed) {
            fprintf(stderr, "rally-run: %s\n", r->kids[i].why);
            return 1;
        }
    return 0;
}

/* The last line on stderr, for people and for tests. */
static void summary(struct run *r)
{
    fprintf(stderr,
            "rally-run: summary: deaths=%d recovered=%d epochs=%d restarts=%d per-rank-deaths=",
            r->ndeaths, r->nrecovered, r->nrecoveries, r->nrestarts);
    for (int i = 0; i < r->world; i++)
        fprintf(stderr, "%s%d:%d", i ? "," : "", i, r->kids[i].deaths);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {{"workers", required_argument, NULL, 'n'},
                                          {"host", required_argument, NULL, 'H'},
                                          {"port", required_argument, NULL, 'p'},
                                          {"startup-timeout-ms", required_argument, NULL, 's'},
                                          {"grace-ms", required_argument, NULL, 'g'},
                                          {"max-restarts", required_argument, NULL, 'm'},
                                          {"heartbeat-timeout-ms", required_argument, NULL, 'b'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    struct run r;
    memset(&r, 0, sizeof r);
    r.host = "127.0.0.1";
    r.startup_ms = 60000;
    r.grace_ms = 3000;
    r.max_restarts = 3;
    r.heartbeat_ms = 10000;
    r.first = -1;
    r.sfd = -1;
    r.kill_at = r.drain_until = RALLY__NEVER;
    int64_t v;
    int c, status = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+n:h", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (rally__parse_int(optarg, 1, RALLY__WORLD_MAX, &v))
                return cli_usage_error("rally-run", "-n wants a number of workers from 1 to %d, not '%s'",
                                   RALLY__WORLD_MAX, optarg);
            r.world = (int)v;
            break;
        case 'H':
            r.host = optarg;
            break;
        case 'p':
            if (rally__parse_int(optarg, 0, 65535, &v))
                return cli_usage_error("rally-run", "--port wants 0..65535, not '%s'", optarg);
            r.port = (int)v;
            break;
        case 's':
        case 'g':
        case 'b':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error("rally-run", "--%s wants milliseconds, not '%s'",
                                   c == 's'   ? "startup-timeout-ms"
                                   : c == 'g' ? "grace-ms"
                                              : "heartbeat-timeout-ms",
                                   optarg);
            *(c == 's' ? &r.startup_ms : c == 'g' ? &r.grace_ms : &r.heartbeat_ms) = v;
            break;
        case 'm':
            if (rally__parse_int(optarg, 0, INT_MAX, &v))
                return cli_usage_error("rally-run", "--max-restarts wants a count (0 or more), not '%s'", optarg);
            r.max_restarts = (int)v;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage_error("rally-run", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (r.world == 0)
        return cli_usage_error("rally-run", "-n N (the number of workers) is required");
    if (optind >= argc)
        return cli_usage_error("rally-run", "no program to run");
    r.argv = argv + optind;

    /* Signals arrive only through the signalfd, from before the first fork. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
        (r.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        fprintf(stderr, "rally-run: cannot set up signal handling: %s\n", strerror(errno));
        goto cleanup;
    }

    const char *tmp = getenv("TMPDIR");
    snprintf(r.dir, sizeof r.dir, "%s/rally-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(r.dir) == NULL) {
        fprintf(stderr, "rally-run: cannot create a directory in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(errno));
        r.dir[0] = '\0';
        goto cleanup;
    }
    snprintf(r.secret, sizeof r.secret, "%s/secret", r.dir);
    struct rally__err e = {0, ""};
    struct rally__secret s;
    if (rally__secret_create(r.secret, &s, &e) != RALLY_OK) {
        r.secret[0] = '\0';
        fprintf(stderr, "rally-run: %s\n", e.msg);
        goto cleanup;
    }
    struct rally__tracker_opts o = {.world = r.world,
                                    .host = r.host,
                                    .port = r.port,
                                    .secret = &s,
                                    .startup_timeout_ms = r.startup_ms,
                                    .print = on_print,
                                    .event = on_event,
                                    .arg = &r};
    r.kids = calloc((size_t)r.world, sizeof *r.kids);
    if (r.kids == NULL) {
        fprintf(stderr, "rally-run: out of memory\n");
        goto cleanup;
    }
    int rc = rally__tracker_new(&r.t, &o, &e);
    memset(&s, 0, sizeof s);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-run: cannot start the tracker: %s\n", e.msg);
        goto cleanup;
    }
    rally__tracker_set_recovery(r.t, r.max_restarts > 0);
    rally__tracker_set_heartbeat_timeout(r.t, r.heartbeat_ms);
    const char *h = r.host;
    if (!*h || !strcmp(h, "*") || !strcmp(h, "0.0.0.0") || !strcmp(h, "::"))
        h = "127.0.0.1"; /* every worker runs here */
    snprintf(r.tracker_addr, sizeof r.tracker_addr, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h,
             rally__tracker_port(r.t));

    for (int i = 0; i < r.world; i++) {
        r.kids[i].rank = i;
        r.kids[i].fd[0] = r.kids[i].fd[1] = -1;
        r.kids[i].fence_kill_at = RALLY__NEVER;
    }
    for (int i = 0; i < r.world; i++) {
        int err = spawn(&r, &r.kids[i]);
        if (err != 0) {
            fprintf(stderr, "rally-run: cannot run '%s': %s\n", r.argv[0], strerror(err));
            kill_all(&r);
            status = 127;
            goto cleanup;
        }
    }
    if (run_loop(&r) != 0) {
        fprintf(stderr, "rally-run: internal error: %s\n", strerror(errno));
        kill_all(&r);
        goto cleanup;
    }
    status = verdict(&r);
    summary(&r);
cleanup:
    fflush(stdout);
    for (int i = 0; r.kids && i < r.world; i++)
        for (int w = 0; w < 2; w++)
            if (r.kids[i].fd[w] >= 0)
                close(r.kids[i].fd[w]);
    rally__tracker_free(r.t);
    free(r.kids);
    if (r.secret[0])
        unlink(r.secret);
    if (r.dir[0])
        rmdir(r.dir);
    if (r.sfd >= 0)
        close(r.sfd);
    return status;
}
