/*
 * rally-run — starts N workers of a rally job, on this host or on others,
 * and watches them.
 *
 *     rally-run -n N [options] [--] prog args...
 *
 * Other hosts (--launcher ssh|slurm|mpirun, launch/kind.h, launch/remote.h,
 * docs/launch.md): each rank is still one local child, a wrapper (ssh, srun,
 * mpirun -np 1) that runs rally-agent on the rank's host with the secret's
 * line on its stdin; the agent's marked stderr lines say what became of the
 * worker, and run_remote_exit (run/grow.c) turns them into what the policy hears (a worker's
 * exit, a lost connection, a host that cannot run it).  A restart starts the
 * same wrapper again: the same host.  --dry-run prints the wrappers' lines.
 *
 * Its parts beside it are in run/ (run/run.h says which file holds what):
 * the options, the hosts, a worker's start, the policy's decisions carried
 * out, growth.
 *
 * main reads as the job goes: parse the options, set up (signals, the job's
 * secret in a fresh 0700 directory removed at exit, the tracker embedded
 * in-process, every worker started), serve, verdict.  Three parts under
 * launch/ do the work: proc.c starts the workers (own process group,
 * PR_SET_PDEATHSIG, RALLY_TRACKER / RALLY_SECRET_FILE / RALLY_TASK_ID in the
 * environment), prefixes their output lines "[rank] " (task id i is rank i:
 * the tracker ranks by task id) and reaps them; serve.c is the poll loop
 * around the tracker, the workers' pipes and a signalfd for SIGCHLD, SIGINT,
 * SIGTERM and SIGHUP (blocked, so they arrive only there); policy.c decides.
 *
 * The tracker's hooks only print its lines and note its events in the
 * policy.  After each rally__tracker_handle (after()) the policy looks at
 * the signals, the reaped exits and the tracker's state, and this file
 * carries out what it decides: a worker that dies after the first GO, while
 * no rank has finalized, is restarted with the same rank, up to
 * --max-restarts times per rank (we tell the tracker with
 * rally__tracker_rank_died, which fences the old incarnation and assembles
 * a new epoch around the new process) — but only a worker killed by a
 * signal: one that exits on its own without finalizing is the job's failure;
 * a worker the tracker fenced while its process still runs is SIGKILLed; any
 * other failure (before the first GO, restarts exhausted, --max-restarts 0,
 * the tracker's own verdict) ABORTs the job through the tracker, gives the
 * others --grace-ms to leave and then SIGKILLs their groups; one line names
 * the first failure and the exit status says what it was (policy.h).
 * SIGINT/SIGTERM/SIGHUP are passed to every worker's group, with the same
 * escalation, and we exit 128+signal.  The last line on stderr is always the
 * summary (deaths, deaths recovered, recovery epochs, restarts, deaths per
 * rank).
 *
 * Output (launch/out.h): while the loop runs every line, the workers' and
 * ours, goes through a bounded queue per stream that is written without
 * blocking, so a slow reader of our stdout never stops the tracker.  A guard
 * process (launch/proc.h) kills the workers' process groups when we die,
 * also of SIGKILL, so workers behind a wrapper script do not outlive us.
 *
 * Durable snapshots (--snapshot-dir, docs/snapshot-format.md; launch/snaps.c):
 * before any worker starts we give the run a UUID, take the job directory's
 * lock for the run's life, refuse a fresh start into a directory that holds
 * snapshots (unless --overwrite), and resolve and verify --resume; the
 * workers get the settings in RALLY_SNAPSHOT_* / RALLY_RUN_* / RALLY_RESUME,
 * rally-run's always: the same variables in its own environment are taken as
 * its flags (run_snap_env), so that a snapshot always has its lock and clean-up.
 * -x VAR[=VALUE] adds a variable for every worker (ssh carries none).
 * After a successful run this run's snapshots are removed unless
 * --keep-snapshots or --snapshot-final.  The first SIGTERM preempts: rank 0
 * is asked for a snapshot, and the job stops once it is committed (exit 5)
 * or --grace-ms passed.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "launch/serve.h"
#include "run/run.h"
#include "tracker/proto.h"
#include "util/clock.h"

/* --- the tracker's hooks: print, and note events in the policy ------------- */

/* The slot of the worker that is rank now (an elastic job renumbers), or -1. */
static int slot_of(struct run *r, int rank)
{
    if (!elastic(r))
        return rank >= 0 && rank < r->slots ? rank : -1;
    for (int i = 0; i < r->slots; i++)
        if (run_rank_now(r, i) == rank)
            return i;
    return -1;
}

static void on_print(void *arg, int rank, const char *msg)
{
    struct run *r = arg;
    int i = r->output_dir ? slot_of(r, rank) : -1;
    for (const char *s = msg, *nl; *s; s = nl ? nl + 1 : s + strlen(s)) {
        nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        rally__launch_out_line(&r->out[0], rank, s, n);
        if (i >= 0)
            rally__launch_proc_log(&r->procs[i], 0, s, n);
    }
}

static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    struct run *r = arg;
    struct rally__launch_event note = {.kind = ev->kind, .rank = ev->rank};
    run_status_event(r, ev);
    if (ev->kind == RALLY__TEV_LOG || ev->kind == RALLY__TEV_PROGRESS) {
        rally__launch_out_say(&r->out[1], "tracker: %s", ev->text);
        return;
    }
    if (ev->kind == RALLY__TEV_FINALIZED || ev->kind == RALLY__TEV_ASSIGNED) {
        note.rank = atoi(ev->task_id);
    } else if (ev->kind == RALLY__TEV_RANK_FAILED) {
        note.rank = run_launched_as(ev->task_id);
        snprintf(note.text, sizeof note.text, "%s", ev->text);
        note.disconnected = ev->disconnected;
    } else if (ev->kind == RALLY__TEV_RESIZED) {
        note.world = ev->world;
        r->redundancy_again = 1;
        if (ev->rank < 0 || !ev->detail[0])
            rally__launch_out_say(&r->out[1], "%s", ev->text); /* it took workers in */
        else /* the rank as launched, not the tracker's numbering */
            rally__launch_out_say(&r->out[1], "rank %d lost for good: %s",
                                  run_launched_as(ev->task_id), ev->detail);
    } else if (ev->kind == RALLY__TEV_RECOVERED) {
        char where[96] = "no worker survived";
        if (ev->has_position)
            rally__position_str(ev->position, where, sizeof where);
        rally__launch_out_say(&r->out[1],
                              "recovered: epoch %u, job back in step %.2f s after the failure (%s)",
                              ev->epoch, ev->seconds, where);
    } else {
        return;
    }
    rally__launch_policy_event(r->pol, &note, rally__now_ms());
}

/* --- the serve loop's owner hooks ------------------------------------------ */

static int done(void *arg)
{
    struct run *r = arg;
    return r->nlive == 0 &&
           (rally__launch_pipes_open(r->procs, rally__launch_policy_slots(r->pol)) == 0 ||
            rally__now_ms() >= r->drain_until);
}

static size_t fill(void *arg, struct pollfd *p)
{
    struct run *r = arg;
    size_t n = rally__launch_pipes_fill(r->procs, rally__launch_policy_slots(r->pol), p, r->slot);
    r->npipes = n;
    for (int w = 0; w < 2; w++) /* a slow reader: write again once it takes more */
        if (rally__launch_out_want(&r->out[w]))
            p[n++] = (struct pollfd){.fd = r->out[w].fd, .events = POLLOUT};
    return n + run_status_fill(r, p, n);
}

static int64_t deadline(void *arg)
{
    struct run *r = arg;
    int64_t d = rally__launch_policy_deadline(r->pol);
    if (r->nlive == 0 && r->drain_until < d)
        d = r->drain_until;
    if (r->snap.preempting && r->snap.preempt_look < d)
        d = r->snap.preempt_look;
    if (remote_grow(r) && r->pending < 0 && r->next_try > 0 && r->next_try < d)
        d = r->next_try; /* refill's next try (when it has one to make) */
    int64_t s = run_status_deadline(r);
    return s < d ? s : d;
}

static void on_signal(void *arg, int sig)
{
    struct run *r = arg;
    if (sig == SIGUSR1) {
        r->snap_now = 1;
        return;
    }
    if (sig == SIGUSR2) {
        r->grow_now++;
        return;
    }
    if (sig == SIGTERM && r->snap.dir != NULL && !r->preempt_now && !r->snap.preempting &&
        r->snap.preempt_until == 0) { /* the first: a snapshot, then the stop */
        r->preempt_now = 1;
        return;
    }
    r->reap = 1;
    if (sig != SIGCHLD && r->nsigs < (int)(sizeof r->sigs / sizeof r->sigs[0]))
        r->sigs[r->nsigs++] = sig;
}

static void handle(void *arg, const struct pollfd *p, size_t n)
{
    struct run *r = arg;
    rally__launch_pipes_handle(r->procs, p, r->slot, r->npipes < n ? r->npipes : n);
    run_status_handle(r, p, n);
    /* the queues are written in after(), once the tracker added its lines */
}

/* SIGUSR1 ("snapshot now") to whoever is rank 0 now: an elastic job that
 * lost the first renumbers, and launched rank 1 may hold it.  0, or -1 when
 * no live worker does (rank 0 died, and is being restarted or given up). */
static int ask_rank0(struct run *r)
{
    int i = slot_of(r, 0);
    if (i < 0 || r->procs[i].pid <= 0)
        return -1;
    rally__launch_signal(&r->procs[i], SIGUSR1);
    return 0;
}

/* The decision point: after the tracker handled its I/O, the policy looks at
 * this turn's signals, exits and the tracker's state, and we act. */
static void after(void *arg)
{
    struct run *r = arg;
    struct rally__launch_act a;
    struct rally__launch_view v;
    if (r->snap_now) { /* rank 0 raises the request bit at its next commit */
        r->snap_now = 0;
        if (r->snap.dir == NULL) {
            rally__launch_out_say(&r->out[1], "SIGUSR1: no --snapshot-dir, so no snapshot");
        } else if (ask_rank0(r) != 0) {
            rally__launch_out_say(&r->out[1], "SIGUSR1: rank 0 has no live worker now (it "
                                              "died: restarted or given up), so no snapshot");
        } else {
            rally__launch_out_say(&r->out[1], "SIGUSR1: asked rank 0 for a snapshot (it prints "
                                              "the path once committed)");
        }
    }
    if (r->preempt_now) { /* rank 0 raises the request bit at its next checkpoint */
        r->preempt_now = 0;
        rally__launch_snaps_preempt(&r->snap, rally__now_ms(), r->grace_ms);
        if (ask_rank0(r) != 0)
            rally__launch_out_say(&r->out[1], "SIGTERM: rank 0 has no live worker now (it died: "
                                              "restarted or given up) to ask for a snapshot");
        else
            rally__launch_out_say(&r->out[1],
                                  "SIGTERM: asked rank 0 for a snapshot at its next checkpoint; "
                                  "the workers stop once it is committed (--grace-ms %lld at most)",
                                  (long long)r->grace_ms);
    }
    for (; r->grow_now > 0; r->grow_now--)
        run_grow(r);
    char snap[sizeof r->snap.jobdir + RALLY__SNAP_NAME_MAX + 1];
    int got = r->snap.preempting
                  ? rally__launch_snaps_preempted(&r->snap, rally__now_ms(), snap, sizeof snap)
                  : 0;
    if (got > 0) {
        rally__launch_policy_preempted(r->pol, SIGTERM, snap, rally__now_ms(), &a);
        run_carry_out(r, &a);
    } else if (got < 0) {
        rally__launch_out_say(&r->out[1], "SIGTERM: no snapshot was committed within --grace-ms: "
                                          "stopping the workers without one");
        rally__launch_policy_signal(r->pol, SIGTERM, rally__now_ms(), &a);
        run_carry_out(r, &a);
    }
    for (int i = 0; i < r->nsigs; i++) {
        r->snap.preempting = 0; /* a second signal stops the job now */
        rally__launch_policy_signal(r->pol, r->sigs[i], rally__now_ms(), &a);
        run_carry_out(r, &a);
    }
    r->nsigs = 0;
    int i, st;
    while (r->reap &&
           (i = rally__launch_reap(r->procs, rally__launch_policy_slots(r->pol), &st)) >= 0) {
        if (--r->nlive == 0)
            r->drain_until = rally__now_ms() + DRAIN_MS;
        run_view(r, &v);
        if (r->procs[i].agent)
            run_remote_exit(r, i, st, &v, &a);
        else
            rally__launch_policy_exit(r->pol, i, st, &v, rally__now_ms(), &a);
        run_carry_out(r, &a);
    }
    r->reap = 0;
    run_view(r, &v);
    rally__launch_policy_tracker(r->pol, &v, rally__now_ms());
    run_refill(r, rally__now_ms());
    run_slow_after(r); /* (a rank given up as slow is killed below, this turn) */
    int k;
    while ((k = rally__launch_policy_due(r->pol, rally__now_ms())) != -1) {
        if (k == RALLY__LAUNCH_KILL_ALL)
            run_signal_all(r, SIGKILL);
        else
            rally__launch_signal(&r->procs[k], SIGKILL);
    }
    /* Once the job failed, its cause is printed once, by us: the workers'
     * stderr lines that repeat it (each rank heard the same ABORT and
     * reports it) are left out.  Their stdout is their data: never touched. */
    if (v.state == RALLY__TRACKER_FAILED && v.sentence[0] && !r->out[1].hide[0])
        snprintf(r->out[1].hide, sizeof r->out[1].hide, "%s",
                 v.reported[0] ? v.reported : v.sentence);
    if (r->redundancy_again)
        run_redundancy_again(r);
    run_status_after(r);
    rally__launch_out_write(&r->out[0]);
    rally__launch_out_write(&r->out[1]);
}

/* The policy's verdict line, with how many worker lines repeating it were
 * left out; returns the exit status. */
static int verdict(const struct run *r, const struct rally__launch_view *v, uint64_t hidden)
{
    char *line = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&line, &n);
    if (f == NULL)
        return rally__launch_policy_verdict(r->pol, v, stderr);
    int status = rally__launch_policy_verdict(r->pol, v, f);
    fclose(f);
    if (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    if (n > 0 && hidden > 0)
        fprintf(stderr, "%s (%llu worker line%s repeating the abort left out)\n", line,
                (unsigned long long)hidden, hidden == 1 ? "" : "s");
    else if (n > 0)
        fprintf(stderr, "%s\n", line);
    free(line);
    return status;
}

/* --- main: set up, serve, verdict (the options: run/options.c) -------------- */

/* --dry-run: each rank's local command line; nothing starts.  The exit status. */
static int dry_run(struct run *r)
{
    run_tracker_address(r, r->port);
    for (int i = 0; i < r->world; i++) {
        char **argv = remote(r) ? run_command(r, i) : NULL;
        char *line = rally__launch_argv_line(argv ? argv : r->argv);
        rally__launch_argv_free(argv);
        if (line == NULL) {
            fprintf(stderr, "rally-run: out of memory\n");
            return 1;
        }
        printf("rank %d: %s\n", i, line);
        free(line);
    }
    return 0;
}

/* A hint for a program that exec could not find: one that is in the current
 * directory but, without a slash, was looked for on PATH only. */
static const char *not_on_path(const char *prog, int err)
{
    static char hint[PATH_MAX + 96];
    if (err != ENOENT || strchr(prog, '/') != NULL || access(prog, F_OK) != 0)
        return "";
    size_t n = strlen(prog);
    if (access(prog, X_OK) != 0 && n > 3 && strcmp(prog + n - 3, ".py") == 0)
        snprintf(hint, sizeof hint, " (PATH was searched; the file here is not executable: "
                                    "say python3 %s)", prog);
    else
        snprintf(hint, sizeof hint, " (PATH was searched, not the current directory: say ./%s)",
                 prog);
    return hint;
}

/* Signals, the secret, the tracker, the workers.  Returns 0 or the exit status. */
static int setup(struct run *r)
{
    if (r->sfd < 0 && (r->sfd = rally__launch_signals(1)) < 0) {
        fprintf(stderr, "rally-run: cannot set up signal handling: %s\n", strerror(errno));
        return 1;
    }
    int err = rally__launch_tmpdir("rally-run", r->dir, sizeof r->dir);
    if (err != 0) {
        const char *tmp = getenv("TMPDIR");
        fprintf(stderr, "rally-run: cannot create a directory in %s: %s\n",
                tmp && *tmp ? tmp : "/tmp", strerror(err));
        r->dir[0] = '\0';
        return 1;
    }
    snprintf(r->secret, sizeof r->secret, "%s/secret", r->dir);
    run_status_token_file(r);
    struct rally__err e = {0, ""};
    struct rally__secret s;
    if (rally__secret_create(r->secret, &s, &e) != RALLY_OK) {
        r->secret[0] = '\0';
        fprintf(stderr, "rally-run: %s\n", e.msg);
        return 1;
    }
    /* the agents read the secret's line on their stdin (launch/remote.h) */
    if (remote(r) && (r->feed = run_slurp(r->secret)) == NULL) {
        memset(&s, 0, sizeof s);
        fprintf(stderr, "rally-run: cannot read back %s: %s\n", r->secret, strerror(errno));
        return 1;
    }
    struct rally__tracker_opts o = {.world = r->world,
                                    .host = r->bind,
                                    .port = r->port,
                                    .secret = &s,
                                    .startup_timeout_ms = r->startup_ms,
                                    .print = on_print,
                                    .event = on_event,
                                    .arg = r};
    r->procs = calloc((size_t)r->slots, sizeof *r->procs);
    r->slot = calloc(2 * (size_t)r->slots, sizeof *r->slot);
    if (r->starts == NULL) /* kept across --auto-resume's attempts: incarnations go on counting */
        r->starts = calloc((size_t)r->slots, sizeof *r->starts);
    if (r->deaths_before == NULL) /* ... and so do deaths */
        r->deaths_before = calloc((size_t)r->slots, sizeof *r->deaths_before);
    if (r->procs == NULL || r->slot == NULL || r->starts == NULL || r->deaths_before == NULL ||
        rally__launch_policy_new(&r->pol, r->world, r->slots, r->max_restarts, r->grace_ms) != 0) {
        memset(&s, 0, sizeof s);
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    if (r->prev_pol != NULL) {
        rally__launch_policy_carry(r->pol, r->prev_pol);
        rally__launch_policy_free(r->prev_pol);
        r->prev_pol = NULL;
    }
    struct rally__launch_out *outs[2] = {&r->out[0], &r->out[1]};
    for (int i = 0; i < r->slots; i++) {
        rally__launch_proc_init(&r->procs[i], i, outs);
        if (remote(r) && i < r->world)
            rally__launch_policy_host(r->pol, i, r->hosts.h[r->host_of[i]].name);
    }
    rally__launch_policy_elastic(r->pol, elastic(r));
    int rc = rally__launch_tracker_new(&r->t, &o, r->max_restarts > 0 || elastic(r),
                                       r->heartbeat_ms, &e);
    memset(&s, 0, sizeof s);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-run: cannot start the tracker: %s\n", e.msg);
        return 1;
    }
    rally__tracker_set_progress_timeout(r->t, r->progress_ms, r->stuck_fail);
    if (elastic(r))
        rally__tracker_set_min_world(r->t, r->min_workers);
    if (elastic(r) && rally__tracker_set_max_world(r->t, r->max_workers) != RALLY_OK) {
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    run_tracker_address(r, rally__tracker_port(r->t));
    for (int i = 0; i < r->world; i++) {
        err = run_spawn(r, i);
        if (err != 0) {
            const char *what = r->kind->wrapper ? r->kind->wrapper : r->argv[0];
            fprintf(stderr, "rally-run: cannot run '%s': %s%s\n", what, strerror(err),
                    not_on_path(what, err));
            rally__launch_kill_all(r->procs, rally__launch_policy_slots(r->pol));
            return 127;
        }
    }
    return 0;
}

/* One attempt's tracker, workers and secret (not the lock, not the signals). */
static void job_teardown(struct run *r)
{
    fflush(stdout);
    for (int i = 0; r->procs && i < r->slots; i++) {
        for (int w = 0; w < 2; w++) {
            if (r->procs[i].fd[w] >= 0)
                close(r->procs[i].fd[w]);
            if (r->procs[i].log[w] >= 0)
                close(r->procs[i].log[w]);
        }
        if (r->procs[i].ctl >= 0)
            close(r->procs[i].ctl);
    }
    rally__tracker_free(r->t);
    rally__launch_policy_free(r->pol);
    free(r->procs);
    free(r->slot);
    if (r->secret[0])
        unlink(r->secret);
    for (int i = 0; r->dir[0] && r->kind->session_dir && i < r->world; i++) {
        char sess[sizeof r->dir + 32]; /* OpenMPI emptied it, unless its mpirun was killed */
        run_session_dir(r, i, sess, sizeof sess);
        rmdir(sess);
    }
    if (r->dir[0])
        rmdir(r->dir);
    if (r->feed != NULL) {
        memset(r->feed, 0, strlen(r->feed));
        free(r->feed);
        r->feed = NULL;
    }
    r->t = NULL;
    r->pol = NULL;
    r->procs = NULL;
    r->slot = NULL;
    r->secret[0] = r->dir[0] = '\0';
    r->nlive = r->nsigs = r->reap = r->snap_now = 0;
    r->drain_until = RALLY__NEVER;
}

static void teardown(struct run *r)
{
    job_teardown(r);
    rally__launch_policy_free(r->prev_pol);
    run_redundancy_free(r);
    rally__launch_hosts_free(&r->hosts);
    free(r->host_of);
    free(r->held);
    free(r->down);
    free(r->ssh_opts);
    free(r->starts);
    free(r->deaths_before);
    run_slow_free(r);
    rally__launch_argv_free(r->xenv);
    rally__launch_argv_free(r->xkey);
    rally__launch_snaps_free(&r->snap);
    if (r->sfd >= 0)
        close(r->sfd);
}

int main(int argc, char **argv)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.sfd = -1;
    r.drain_until = RALLY__NEVER;
    if (cli_version("rally-run", argc, argv))
        return 0;
    if (argc > 1 && strcmp(argv[1], "status") == 0) /* a running job's ranks (docs/status.md) */
        return run_status_cli(argc - 1, argv + 1);
    int status = run_parse(argc, argv, &r);
    if (status < 0 && (status = run_resolve_bind(&r)) == 0 && (status = run_place(&r)) == 0 &&
        (status = run_redundancy(&r)) == 0 && (r.dry_run || (status = run_output_dir(&r)) == 0))
        status = -1;
    if (status < 0 && r.dry_run) {
        status = rally__launch_snaps_setup(&r.snap, r.argv, r.world, 1);
        if (status == 0)
            status = dry_run(&r);
    }
    if (status >= 0) {
        run_redundancy_free(&r);
        rally__launch_hosts_free(&r.hosts);
        free(r.host_of);
        free(r.held);
        free(r.down);
        free(r.ssh_opts);
        rally__launch_argv_free(r.xenv);
        rally__launch_argv_free(r.xkey);
        return status;
    }
    int gerr = rally__launch_guard_start(); /* first: it must hold nothing of ours */
    if (gerr != 0)
        fprintf(stderr,
                "rally-run: note: no guard process (%s): workers started through a "
                "wrapper may outlive rally-run if it is killed\n",
                strerror(gerr));
    run_check_reach(&r);
    if ((status = rally__launch_snaps_setup(&r.snap, r.argv, r.world, 0)) != 0 ||
        (status = run_status_start(&r)) != 0)
        goto cleanup;
    for (;;) {
        status = setup(&r);
        if (status != 0)
            goto cleanup;
        struct rally__launch_owner owner = {.arg = &r,
                                            /* pipes, outputs, the status server */
                                            .nfds = 2 * (size_t)r.slots + 2 + run_status_npoll(&r),
                                            .done = done,
                                            .fill = fill,
                                            .deadline = deadline,
                                            .signal = on_signal,
                                            .handle = handle,
                                            .after = after};
        fflush(stdout);
        fflush(stderr);
        rally__launch_out_open(&r.out[1], 2, "stderr", (size_t)r.out_bytes, NULL);
        rally__launch_out_open(&r.out[0], 1, "stdout", (size_t)r.out_bytes, &r.out[1]);
        run_status_outs(&r);
        int served = rally__launch_serve(r.t, r.sfd, &owner), e = errno;
        uint64_t hidden = r.out[0].hidden + r.out[1].hidden;
        rally__launch_out_finish(&r.out[0]); /* its drop notice goes to stderr: first */
        rally__launch_out_finish(&r.out[1]);
        if (served != RALLY_OK) {
            fprintf(stderr, "rally-run: internal error: %s\n", strerror(e));
            rally__launch_kill_all(r.procs, r.world);
            status = 1;
            goto cleanup;
        }
        struct rally__launch_view v;
        run_view(&r, &v);
        status = verdict(&r, &v, hidden);
        /* a failure (not a signal, not an unrunnable program) may restart the
         * job: one for good, or what recovery in memory lost (a rank's
         * "cannot recover: ..." is status 3, a stop of its own) */
        int lost = status == RALLY__LAUNCH_EXIT_ABORT && rally__tracker_lost(r.t);
        if ((status == 1 || lost) && r.auto_resume && r.job_restarts < r.max_job_restarts &&
            rally__launch_snaps_auto(&r.snap, r.job_restarts + 1, r.max_job_restarts)) {
            r.job_restarts++;
            /* a kill point counts the deaths of every attempt (rally_mock_deaths);
             * the policy carries those of the first -n ranks already */
            for (int i = 0; i < rally__launch_policy_slots(r.pol) && i < r.slots; i++) {
                struct rally__launch_rank_counts c;
                rally__launch_policy_rank(r.pol, i, &c);
                r.deaths_before[i] = i < r.world ? c.deaths : r.deaths_before[i] + c.deaths;
            }
            r.prev_pol = r.pol; /* the next attempt's summary carries its counts */
            r.pol = NULL;
            job_teardown(&r);
            continue;
        }
        if ((status == 1 || lost) && r.auto_resume && r.job_restarts == r.max_job_restarts)
            fprintf(stderr, "rally-run: auto-resume: %d job restart%s spent (--max-job-restarts)\n",
                    r.job_restarts, r.job_restarts == 1 ? "" : "s");
        rally__launch_snaps_cleanup(&r.snap, status);
        run_status_end(&r, status);
        rally__launch_policy_summary(r.pol, stderr);
        break;
    }
cleanup:
    run_status_end(&r, status);
    teardown(&r);
    return status;
}
