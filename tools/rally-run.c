/*
 * rally-run — starts N workers of a rally job, on this host or on others,
 * and watches them.
 *
 *     rally-run -n N [options] [--] prog args...
 *
 * Other hosts (--launcher ssh|slurm|mpirun, launch/remote.h, docs/launch.md):
 * each rank is still one local child, a wrapper (ssh, srun, mpirun -np 1)
 * that runs rally-agent on the rank's host with the secret's line on its
 * stdin; the agent's marked stderr lines say what became of the worker, and
 * remote_exit turns them into what the policy hears (a worker's exit, a lost
 * connection, a host that cannot run it).  A restart starts the same
 * wrapper again: the same host.  --dry-run prints the wrappers' lines.
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
 * its flags (snap_env), so that a snapshot always has its lock and clean-up.
 * -x VAR[=VALUE] adds a variable for every worker (ssh carries none).
 * After a successful run this run's snapshots are removed unless
 * --keep-snapshots or --snapshot-final.  The first SIGTERM preempts: rank 0
 * is asked for a snapshot, and the job stops once it is committed (exit 5)
 * or --grace-ms passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "launch/out.h"
#include "launch/policy.h"
#include "launch/proc.h"
#include "launch/remote.h"
#include "launch/serve.h"
#include "launch/snaps.h"
#include "net/auth.h"
#include "net/sock.h"
#include "snapshot/snapshot.h"
#include "tracker/proto.h"
#include "tracker/server.h"
#include "util/clock.h"

#define DRAIN_MS 1000 /* how long pipes may stay open after every worker is reaped */

struct run {
    int world;
    const char *host;
    char bind[RALLY__HOST_MAX]; /* host, an interface name made its address */
    int port;
    int64_t startup_ms, grace_ms, heartbeat_ms;
    int64_t progress_ms; /* --progress-timeout-ms */
    int stuck_fail;      /* --on-stuck fail */
    int max_restarts;
    int min_workers; /* --min-workers: an elastic job goes on with at least this many */
    int max_workers; /* --max-workers: ... and takes workers in (SIGUSR2) up to this many */
    int slots;       /* room for the ranks launched, ranks taken in included */
    int grow_now;    /* SIGUSR2s that arrived this turn */
    /* growth on remote hosts (remote_grow): the workers the job is to have
     * (-n, one more per SIGUSR2), the joiner started and not yet taken in or
     * ended (-1: none), when to try a host with a slot free again, and which
     * hosts a try could not reach (said once) */
    int want, pending;
    int64_t rejoin_ms, next_try;
    unsigned char *down, *held;
    char **argv;
    struct rally__launch_proc *procs;
    int *slot;     /* which pipe each of our pollfd slots holds */
    size_t npipes; /* how many of our slots this turn are pipes (then the outputs) */
    int nlive;     /* workers spawned and not yet reaped */
    struct rally__launch_policy *pol;
    struct rally__launch_policy *prev_pol; /* --auto-resume: the attempt before, until the next */
    struct rally__tracker *t;
    int sfd;
    char dir[PATH_MAX], secret[PATH_MAX + 16], tracker_addr[RALLY__HOST_MAX + 16];
    int sigs[4], nsigs; /* SIGINT/SIGTERM/SIGHUP that arrived this turn */
    int reap;           /* a signal arrived this turn: reap */
    int64_t drain_until;
    /* durable snapshots: the options, the run, preemption (launch/snaps.h) */
    struct rally__launch_snaps snap;
    int snap_now;    /* SIGUSR1 arrived this turn */
    int preempt_now; /* a SIGTERM that preempts arrived this turn */
    int auto_resume, max_job_restarts, job_restarts;
    char given[128];    /* the options given on the command line, by their letter */
    char env_snap[160]; /* "RALLY_SNAPSHOT_EVERY=2": the first snapshot setting taken from the
                           environment (env_options), for the error when it needs a directory */
    /* -x VAR[=VALUE], for every worker (export_option): "VAR=VALUE" and VAR each */
    char **xenv, **xkey;
    size_t nxenv;
    /* while the loop runs, every line goes through these (launch/out.h) */
    struct rally__launch_out out[2]; /* stdout, stderr */
    int64_t out_bytes;               /* --output-buffer-bytes */
    /* ranks on other hosts (launch/remote.h, docs/launch.md) */
    int launcher; /* RALLY__LAUNCHER_* */
    const char *hosts_opt, *hostfile, *agent_opt;
    const char **ssh_opts;
    size_t nssh_opts;
    int dry_run;
    struct rally__launch_hosts hosts;
    int *host_of;             /* rank -> index in hosts */
    char agent[PATH_MAX];     /* rally-agent's path on the hosts */
    char *feed;               /* the secret's line, for the agents' stdin */
};

static char *slurp(const char *path);

/* The job may go on with other workers (--min-workers, --max-workers). */
static int elastic(const struct run *r)
{
    return r->min_workers < r->world || r->max_workers > r->world;
}

/* --launcher ssh with --max-workers: a slot freed by a rank given up (its
 * host gone) or a SIGUSR2 gets a worker again, on a host with a slot free,
 * tried again every --rejoin-ms until the host answers. */
static int remote_grow(const struct run *r)
{
    return r->launcher == RALLY__LAUNCHER_SSH && r->given['M'];
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: rally-run -n N [options] [--] prog [args...]\n"
        "Runs N workers of a rally job on this host, with a tracker inside.\n"
        "\n"
        "  -n, -np, --workers N       number of workers (1..%d)\n"
        "      --bind ADDR|IFACE      tracker bind address, or an interface's first\n"
        "                             address ([v6] or bare v6; default 127.0.0.1 with the\n"
        "                             local launcher, every address with the others)\n"
        "      --host H               the same as --bind\n"
        "      --port P               tracker port (default 0: any free port)\n"
        "      --startup-timeout-ms T every worker must join (and a restarted one\n"
        "                             rejoin) within T ms (default 60000)\n"
        "      --grace-ms G           after a failure or a signal, workers get G ms to exit\n"
        "                             before SIGKILL (default 3000)\n"
        "      --max-restarts K       restart each rank at most K times (default 3; 0: the\n"
        "                             first worker death fails the job)\n"
        "      --min-workers M        elastic: a rank that cannot come back (its restarts\n"
        "                             spent) is given up and the others go on without it from\n"
        "                             the newest checkpoint, renumbered, while at least M are\n"
        "                             left (default N: the job fails; docs/recovery.md)\n"
        "      --max-workers M        elastic: SIGUSR2 to rally-run starts one more worker,\n"
        "                             which the job takes in at its next checkpoint, up to M\n"
        "                             (default N).  With --launcher ssh the worker goes to a\n"
        "                             host with a slot free, and a slot freed by a rank given\n"
        "                             up (its host gone) is filled again once a host answers\n"
        "      --rejoin-ms T          --launcher ssh --max-workers: try a host with a slot free\n"
        "                             again every T ms (default 5000); --hostfile is re-read\n"
        "                             then, so a host added to it takes a place too\n"
        "      --heartbeat-timeout-ms T  a worker that sent heartbeats and then falls silent\n"
        "                             for T ms is killed and restarted (default 10000; 0: off)\n"
        "      --progress-timeout-ms T  a rank the others have waited for T ms in a collective\n"
        "                             it has not called (its heartbeats say it stands still in\n"
        "                             its own code), or that has not come back to a recovery\n"
        "                             round for T ms, is named and handled by --on-stuck\n"
        "                             (default 600000, 10 minutes; 0: off)\n"
        "      --on-stuck restart|fail  such a rank is killed (SIGKILL to its process group) and\n"
        "                             restarted like a dead one (restart, the default), or the\n"
        "                             job fails with the sentence naming it (fail)\n"
        "      --output-buffer-bytes B  output waiting for a slow reader of stdout or stderr is\n"
        "                             held up to B bytes per stream (default 4 MiB); beyond,\n"
        "                             worker lines are dropped and counted, never waited for\n"
        "Durable snapshots (docs/snapshot-format.md):\n"
        "      --snapshot-dir DIR     write snapshots of committed checkpoints to DIR/JOB/\n"
        "      --snapshot-copy DIR|s3://BUCKET/PREFIX  copy each committed snapshot there too,\n"
        "                             in the background (verified there; retention there too);\n"
        "                             --resume latest takes the newest of both tiers\n"
        "      --snapshot-local       DIR is each host's own disk (not shared): each rank copies\n"
        "                             its own files to --snapshot-copy, the snapshot is\n"
        "                             committed there only, and each host keeps only its\n"
        "                             files of the newest one copied\n"
        "      --job NAME             JOB (default: the program's file name)\n"
        "      --snapshot-every K     a snapshot every K checkpoint versions\n"
        "      --snapshot-every-ms T  a snapshot when T ms passed since the last (rank 0's clock)\n"
        "      --snapshot-keep K      keep this run's newest K snapshots (default 2)\n"
        "      --snapshot-required    a failed snapshot fails the job (default: logged)\n"
        "      --snapshot-final       snapshot the last version at the end, and keep it\n"
        "      --snapshot-busy wait|skip  a snapshot asked for while one is still being written:\n"
        "                             the next checkpoint waits for the write (default), or\n"
        "                             it is skipped (logged) and the write goes on\n"
        "      --keep-snapshots       keep this run's snapshots after it succeeded\n"
        "      --resume latest|PATH   start from the newest complete snapshot of the newest run\n"
        "                             in DIR/JOB, or from the snapshot directory PATH\n"
        "                             (verified before any worker starts)\n"
        "      --overwrite            start afresh although DIR/JOB holds snapshots (they stay)\n"
        "      --force                resume although the application, its configuration or\n"
        "                             rally's version differ\n"
        "      --auto-resume          when the job fails for good (restarts spent, every worker\n"
        "                             lost), restart the whole job from this run's newest\n"
        "                             complete snapshot\n"
        "      --max-job-restarts K   at most K such restarts (default 3)\n"
        "SIGUSR1 to rally-run asks for a snapshot now (with --snapshot-dir).  SIGTERM (a\n"
        "preemption; Slurm's --signal) with --snapshot-dir asks for one at the next\n"
        "checkpoint, waits up to --grace-ms for its commit, then stops the job (exit 5).\n"
        "RALLY_SNAPSHOT_DIR, _COPY, _JOB, _EVERY, _EVERY_MS, _KEEP, _REQUIRED, _FINAL, _BUSY and\n"
        "RALLY_RESUME, RALLY_RESUME_FORCE in rally-run's environment are these flags where\n"
        "they are not given (docs/config.md); a malformed value is a usage error.\n"
        "Workers on other hosts (docs/launch.md):\n"
        "      --launcher L           local (default: every worker here), ssh, slurm or mpirun:\n"
        "                             each rank is one local ssh / srun / mpirun -np 1 that runs\n"
        "                             rally-agent on the rank's host, which runs prog; a rank is\n"
        "                             restarted on the host it ran on\n"
        "      --hosts h1:4,h2:4      the hosts and their slots (none: 1); ranks fill them in\n"
        "                             order (slurm: default the allocation's nodes; mpirun:\n"
        "                             default localhost)\n"
        "      --hostfile F           one host a line: host, host:K or host slots=K; # comments\n"
        "      --ssh-option OPT       passed to ssh as -o OPT (repeatable), e.g. Port=2222\n"
        "      --agent PATH           rally-agent's path on the hosts (default: the one beside\n"
        "                             rally-run; prog and rally-agent must exist on every host)\n"
        "  -x VAR | VAR=VALUE         every worker gets VAR with rally-run's value, or VALUE\n"
        "                             (repeatable; mpirun's spelling).  Remote workers get\n"
        "                             rally-run's RALLY_* variables and nothing else without\n"
        "                             it: a Python job wants -x PYTHONPATH.  Local workers\n"
        "                             inherit rally-run's environment; VALUE overrides it\n"
        "      --dry-run              print each rank's local command line (\"rank R: ...\") and\n"
        "                             exit; nothing is started\n"
        "      With these the tracker binds every address and the workers are told this host's\n"
        "      primary address (the first IPv4 one of an interface that is up and not loopback),\n"
        "      unless --bind names the one they reach.  The secret reaches the agent on its\n"
        "      stdin, never in argv or the environment (docs/security.md).\n"
        "  -h, --help                 this text\n"
        "      --version              rally-run's version (as the first argument)\n"
        "\n"
        "Workers get RALLY_TRACKER, RALLY_SECRET_FILE and RALLY_TASK_ID; their output\n"
        "lines (from every host) are prefixed with \"[rank] \".  A worker killed by a\n"
        "signal after the job started (and before any rank finalized) is a crash: it is\n"
        "started again with the same rank and environment (on the same host; so is one\n"
        "whose host connection was lost); the others wait and recover.  A worker that\n"
        "exits on its own without rally_finalize is a failure of the job: nobody is\n"
        "restarted.  One line on stderr names the first failure.  Exit status:\n"
        "  0      every worker exited 0 after rally_finalize\n"
        "  S      a worker exited with status S (1..255) and that failed the job\n"
        "         (1 when it exited 0 without rally_finalize)\n"
        "  3      a rank stopped the job with its own message (rally_abort, or an error\n"
        "         it reported, e.g. a divergence); the line is \"rank R failed: ...\"\n"
        "  4      the job's settings or input were refused: a worker's setting at start\n"
        "         (a RALLY_* typo, rally_mock without librally_mock), a refused resume,\n"
        "         or a restarted rank that read another input; no death is counted\n"
        "  5      preempted: with --snapshot-dir, SIGTERM asked rank 0 for a snapshot at its\n"
        "         next checkpoint, it was committed within --grace-ms, then the workers\n"
        "         were stopped; --resume latest continues from it (not committed in time:\n"
        "         128+15)\n"
        "  1      any other failure (deaths before the start, restarts exhausted, the\n"
        "         tracker's own verdict, \"host H (rank R): cannot be reached: ...\")\n"
        "  2      a usage error;  127: prog cannot be run (on a host: \"host H (rank R): prog:\n"
        "         not found\");  128+S: rally-run got signal S\n"
        "         (SIGINT, SIGTERM, SIGHUP: passed to the workers, who get --grace-ms)\n"
        "The last line on stderr is a summary:\n"
        "  rally-run: summary: deaths=D recovered=R epochs=E restarts=S "
        "per-rank-deaths=0:0,1:2,...\n"
        "  (recovered: deaths after which the job got back in step; epochs: recoveries,\n"
        "  one per re-wiring, which can serve several deaths at once); after --auto-resume\n"
        "  restarted the job K times, one line counts every attempt and ends job-restarts=K\n",
        RALLY__WORLD_MAX);
}

/* --- the tracker's hooks: print, and note events in the policy ------------- */

static void on_print(void *arg, int rank, const char *msg)
{
    struct run *r = arg;
    for (const char *s = msg, *nl; *s; s = nl ? nl + 1 : s + strlen(s)) {
        nl = strchr(s, '\n');
        rally__launch_out_line(&r->out[0], rank, s, nl ? (size_t)(nl - s) : strlen(s));
    }
}

/* Workers are ours by the rank they were launched as, their task id. */
static int launched_as(const char *task_id)
{
    return task_id && task_id[0] ? atoi(task_id) : -1;
}

static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    struct run *r = arg;
    struct rally__launch_event note = {.kind = ev->kind, .rank = ev->rank};
    if (ev->kind == RALLY__TEV_LOG || ev->kind == RALLY__TEV_PROGRESS) {
        rally__launch_out_say(&r->out[1], "tracker: %s", ev->text);
        return;
    }
    if (ev->kind == RALLY__TEV_FINALIZED || ev->kind == RALLY__TEV_ASSIGNED) {
        note.rank = atoi(ev->task_id);
    } else if (ev->kind == RALLY__TEV_RANK_FAILED) {
        note.rank = launched_as(ev->task_id);
        snprintf(note.text, sizeof note.text, "%s", ev->text);
        note.disconnected = ev->disconnected;
    } else if (ev->kind == RALLY__TEV_RESIZED) {
        note.world = ev->world;
        const char *how = strstr(ev->text, " lost for good: "); /* the tracker's numbering */
        if (ev->rank < 0 || how == NULL)
            rally__launch_out_say(&r->out[1], "%s", ev->text); /* it took workers in */
        else
            rally__launch_out_say(&r->out[1], "rank %d lost for good: %s",
                                  launched_as(ev->task_id), how + 16);
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

/* --- the variables rally-run sets for every worker --------------------------- */

/* The snapshot settings rally-run owns (docs/config.md): the workers' library
 * reads them as RALLY_* variables, but rally-run keeps the run's id, the job
 * directory's lock and the clean-up, so in its own environment it takes each
 * as the flag beside it, where that flag is not given (env_options), and every
 * worker, under every launcher, gets rally-run's value and never the one of
 * the environment.  RALLY_RUN_ID and RALLY_RUN_STARTED have no flag: every
 * run makes its own, so either in the environment is refused. */
static const struct {
    const char *var;
    int opt; /* the flag's letter in parse(), 0: none */
    const char *flag;
} snap_env[] = {
    {"RALLY_SNAPSHOT_DIR", 'D', "--snapshot-dir"},
    {"RALLY_SNAPSHOT_COPY", 'C', "--snapshot-copy"},
    {"RALLY_SNAPSHOT_LOCAL", 'V', "--snapshot-local"},
    {"RALLY_SNAPSHOT_JOB", 'J', "--job"},
    {"RALLY_SNAPSHOT_EVERY", 'E', "--snapshot-every"},
    {"RALLY_SNAPSHOT_EVERY_MS", 'T', "--snapshot-every-ms"},
    {"RALLY_SNAPSHOT_KEEP", 'K', "--snapshot-keep"},
    {"RALLY_SNAPSHOT_REQUIRED", 'Q', "--snapshot-required"},
    {"RALLY_SNAPSHOT_FINAL", 'F', "--snapshot-final"},
    {"RALLY_SNAPSHOT_BUSY", 'B', "--snapshot-busy"},
    {"RALLY_RESUME", 'R', "--resume"},
    {"RALLY_RESUME_FORCE", 'f', "--force"},
    {"RALLY_RUN_ID", 0, NULL},
    {"RALLY_RUN_STARTED", 0, NULL},
};
#define NSNAP_ENV (sizeof snap_env / sizeof snap_env[0])

/* The name of "K=V" (or "K") is one rally-run sets for every worker itself:
 * its entry in snap_env, or the three every worker gets (-1: not ours). */
static long owned(const char *kv, size_t n)
{
    static const char *const wiring[] = {"RALLY_TRACKER", "RALLY_SECRET_FILE", "RALLY_TASK_ID",
                                         "RALLY_ELASTIC"};
    for (size_t i = 0; i < NSNAP_ENV; i++)
        if (strlen(snap_env[i].var) == n && strncmp(kv, snap_env[i].var, n) == 0)
            return (long)i;
    for (size_t i = 0; i < sizeof wiring / sizeof wiring[0]; i++)
        if (strlen(wiring[i]) == n && strncmp(kv, wiring[i], n) == 0)
            return (long)NSNAP_ENV;
    return -1;
}

/* --- carrying out the policy's decisions ------------------------------------ */

static void signal_all(struct run *r, int sig)
{
    for (int i = 0; i < rally__launch_policy_slots(r->pol); i++)
        rally__launch_signal(&r->procs[i], sig);
}

/* Appends "K=V" to env at *k; 0, or 1 when out of memory. */
static int kv(char **env, size_t *k, const char *key, const char *value)
{
    char *s;
    if (asprintf(&s, "%s=%s", key, value) < 0)
        return 1;
    env[(*k)++] = s;
    return 0;
}

/* The agent's --env settings for rank i (launch/remote.h), "K=V" each:
 * what a local worker gets but the secret's file, the snapshot settings
 * only with --snapshot-dir, the resume ones only when resuming, the -x
 * variables, and rally-run's own RALLY_* variables but those it sets itself
 * (snap_env: never the environment's; ssh carries no environment).  NULL
 * terminated, malloc'd (rally__launch_argv_free); NULL when out of memory. */
static char **agent_env(const struct run *r, const char *id)
{
    extern char **environ;
    size_t n = 0, k = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **env = calloc(n + r->nxenv + 20, sizeof *env);
    if (env == NULL)
        return NULL;
    int oom = 0;
#define SET(K, V) (oom |= kv(env, &k, (K), (V)))
    SET("RALLY_TRACKER", r->tracker_addr);
    SET("RALLY_TASK_ID", id);
    if (elastic(r))
        SET("RALLY_ELASTIC", "1");
    if (r->snap.dir != NULL) {
        SET("RALLY_RUN_ID", r->snap.run_id);
        SET("RALLY_RUN_STARTED", r->snap.run_started);
        SET("RALLY_SNAPSHOT_DIR", r->snap.abs);
        if (r->snap.copy_abs[0])
            SET("RALLY_SNAPSHOT_COPY", r->snap.copy_abs);
        SET("RALLY_SNAPSHOT_JOB", r->snap.job);
        SET("RALLY_SNAPSHOT_EVERY", r->snap.every_s);
        SET("RALLY_SNAPSHOT_EVERY_MS", r->snap.every_ms_s);
        SET("RALLY_SNAPSHOT_KEEP", r->snap.keep_s);
        SET("RALLY_SNAPSHOT_REQUIRED", r->snap.required ? "1" : "0");
        SET("RALLY_SNAPSHOT_LOCAL", r->snap.local ? "1" : "0");
        SET("RALLY_SNAPSHOT_FINAL", r->snap.final ? "1" : "0");
        SET("RALLY_SNAPSHOT_BUSY", r->snap.busy);
    }
    if (r->snap.resume_path[0]) {
        SET("RALLY_RESUME", r->snap.resume_path);
        SET("RALLY_RESUME_FORCE", r->snap.force ? "1" : "0");
    }
#undef SET
    for (size_t i = 0; i < r->nxenv && !oom; i++) /* -x */
        if ((env[k] = strdup(r->xenv[i])) != NULL)
            k++;
        else
            oom = 1;
    size_t ours = k;
    for (char **e = environ; *e && !oom; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "RALLY_", 6) != 0 || eq == NULL || owned(*e, (size_t)(eq - *e)) >= 0)
            continue;
        size_t len = (size_t)(eq - *e) + 1;
        int dup = 0;
        for (size_t j = 0; j < ours && !dup; j++)
            dup = strncmp(env[j], *e, len) == 0;
        if (!dup && (env[k] = strdup(*e)) != NULL)
            k++;
        else if (!dup)
            oom = 1;
    }
    if (oom) {
        rally__launch_argv_free(env);
        return NULL;
    }
    return env;
}

/* mpirun: rank i's OpenMPI session directory base, its own in our temp
 * directory (removed at the end); a dry run, which has none, only names it. */
static void session_dir(const struct run *r, int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/ompi-%d", r->dir[0] ? r->dir : "RALLY_RUN_TMPDIR", i);
}

/* Rank i's wrapper command line (launch/remote.h), or NULL (out of memory). */
static char **command(const struct run *r, int i)
{
    char id[16];
    snprintf(id, sizeof id, "%d", i);
    char **env = agent_env(r, id);
    if (env == NULL)
        return NULL;
    char sess[sizeof r->dir + 32];
    session_dir(r, i, sess, sizeof sess);
    if (r->launcher == RALLY__LAUNCHER_MPIRUN && r->dir[0])
        (void)mkdir(sess, 0700); /* EEXIST for a restart */
    struct rally__launch_cmd_in in = {r->launcher,  r->hosts.h[r->host_of[i]].name,
                                      r->ssh_opts,  r->nssh_opts,
                                      r->agent,     (const char *const *)env,
                                      r->argv,
                                      r->launcher == RALLY__LAUNCHER_MPIRUN ? sess : NULL};
    char **argv = rally__launch_command(&in);
    rally__launch_argv_free(env);
    return argv;
}

/* Starts rank i; returns 0, or the errno of a failed fork or exec. */
static int spawn(struct run *r, int i)
{
    int err;
    if (r->launcher != RALLY__LAUNCHER_LOCAL) {
        char **argv = command(r, i);
        if (argv == NULL)
            return ENOMEM;
        err = rally__launch_spawn_agent(&r->procs[i], argv, r->feed);
        rally__launch_argv_free(argv);
        if (r->procs[i].pid > 0) {
            r->nlive++;
            rally__launch_policy_spawned(r->pol, i);
        }
        return err;
    }
    char id[16];
    snprintf(id, sizeof id, "%d", i);
    const char *const ours[][2] = {
        {"RALLY_TRACKER", r->tracker_addr},
        {"RALLY_SECRET_FILE", r->secret},
        {"RALLY_TASK_ID", id},
        {"RALLY_ELASTIC", elastic(r) ? "1" : "0"},
        /* "" without --snapshot-dir: a job given snapshot settings of its
         * own then owns its run (src/api/resume.c) */
        {"RALLY_RUN_ID", r->snap.dir ? r->snap.run_id : ""},
        {"RALLY_RUN_STARTED", r->snap.dir ? r->snap.run_started : ""},
        {"RALLY_SNAPSHOT_DIR", r->snap.abs}, /* "" without --snapshot-dir */
        {"RALLY_SNAPSHOT_COPY", r->snap.copy_abs},
        {"RALLY_SNAPSHOT_JOB", r->snap.job},
        {"RALLY_SNAPSHOT_EVERY", r->snap.every_s},
        {"RALLY_SNAPSHOT_EVERY_MS", r->snap.every_ms_s},
        {"RALLY_SNAPSHOT_KEEP", r->snap.keep_s},
        {"RALLY_SNAPSHOT_REQUIRED", r->snap.required ? "1" : "0"},
        {"RALLY_SNAPSHOT_LOCAL", r->snap.local ? "1" : "0"},
        {"RALLY_SNAPSHOT_FINAL", r->snap.final ? "1" : "0"},
        {"RALLY_SNAPSHOT_BUSY", r->snap.busy},
        {"RALLY_RESUME", r->snap.resume_path},
        {"RALLY_RESUME_FORCE", r->snap.force ? "1" : "0"},
        {NULL, NULL}};
    /* the workers inherit our environment: -x VAR=VALUE sets VALUE, -x VAR is theirs already */
    size_t nours = sizeof ours / sizeof ours[0];
    const char *(*env)[2] = calloc(r->nxenv + nours, sizeof *env);
    if (env == NULL)
        return ENOMEM;
    for (size_t j = 0; j < r->nxenv; j++) {
        env[j][0] = r->xkey[j];
        env[j][1] = r->xenv[j] + strlen(r->xkey[j]) + 1;
    }
    memcpy(env + r->nxenv, ours, sizeof ours);
    err = rally__launch_spawn(&r->procs[i], r->argv, (const char *const(*)[2])env);
    free(env);
    if (r->procs[i].pid > 0) {
        r->nlive++;
        rally__launch_policy_spawned(r->pol, i);
    }
    return err;
}

/* An elastic job renumbers the workers (src/tracker/job.c): the rank the
 * one launched as rank `launched` has now. */
static int rank_now(const struct run *r, int launched)
{
    char id[16];
    snprintf(id, sizeof id, "%d", launched);
    return rally__tracker_rank_of(r->t, id);
}

static void carry_out(struct run *r, const struct rally__launch_act *a)
{
    if (a->say[0])
        rally__launch_out_say(&r->out[1], "%s", a->say);
    if (a->abort[0])
        rally__tracker_abort(r->t, RALLY_EPEER, "%s", a->abort);
    if (a->forward)
        signal_all(r, a->forward);
    if (a->gone >= 0)
        rally__tracker_rank_gone(r->t, rank_now(r, a->gone), a->cause);
    if (a->restart >= 0) {
        int i = a->restart;
        /* its events land before the new process */
        rally__tracker_rank_died(r->t, rank_now(r, i), a->cause);
        rally__launch_flush(&r->procs[i]);
        int err = spawn(r, i);
        if (err != 0) {
            struct rally__launch_act b;
            rally__launch_policy_spawn_failed(r->pol, i, err, rally__now_ms(), &b);
            carry_out(r, &b);
        }
    }
}

static void view(const struct run *r, struct rally__launch_view *v)
{
    v->failed_rank = -1;
    v->sentence = "";
    v->state = rally__tracker_state(r->t, &v->sentence, &v->failed_rank);
    if (v->failed_rank >= 0)
        v->failed_rank = launched_as(rally__tracker_task_of(r->t, v->failed_rank));
    v->code = rally__tracker_code(r->t);
    v->recoverable = rally__tracker_recoverable(r->t);
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
    return n;
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
    return d;
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
    /* the queues are written in after(), once the tracker added its lines */
}

/* Rank i's wrapper ended with wait status st: what its agent said (read to
 * the end of its pipes first), or its silence, goes to the policy as a
 * worker's exit, a lost connection or a failure to start (launch/remote.h). */
static void remote_exit(struct run *r, int i, int st, const struct rally__launch_view *v,
                        struct rally__launch_act *a)
{
    rally__launch_flush(&r->procs[i]);
    char why[640];
    int out = 0;
    int kind = rally__launch_outcome(&r->procs[i].seen, st, r->launcher,
                                     r->hosts.h[r->host_of[i]].name, i, r->agent, r->argv[0], why,
                                     sizeof why, &out);
    int joiner = rally__launch_policy_joining(r->pol, i), h = r->host_of[i];
    if (kind == RALLY__LAUNCH_AS_STATUS)
        rally__launch_policy_exit(r->pol, i, out, v, rally__now_ms(), a);
    else if (kind == RALLY__LAUNCH_AS_LOST)
        rally__launch_policy_lost(r->pol, i, v, rally__now_ms(), a);
    else
        rally__launch_policy_unstarted(r->pol, i, why, out, v, rally__now_ms(), a);
    if (joiner && remote_grow(r) && !rally__launch_policy_holds(r->pol, i)) {
        /* refill tries again after --rejoin-ms; the first miss on a host is said */
        if (r->down[h])
            a->say[0] = '\0';
        else
            snprintf(a->say + strlen(a->say), sizeof a->say - strlen(a->say),
                     "; trying a host with a slot free again every %lld ms",
                     (long long)r->rejoin_ms);
        r->down[h] = 1;
    }
}

/* --hostfile again (remote_grow): a host added takes places, one taken out
 * takes no more.  Unreadable or malformed: said, and the hosts stay. */
static void reread_hostfile(struct run *r)
{
    struct rally__launch_hosts fresh = {NULL, 0};
    char err[512];
    char *text = r->hostfile ? slurp(r->hostfile) : NULL;
    if (r->hostfile == NULL)
        return;
    if (text == NULL || rally__launch_hostfile_parse(&fresh, text, err, sizeof err) != 0) {
        rally__launch_out_say(&r->out[1], "--hostfile %s: %s: the hosts stay as they were",
                              r->hostfile, text ? err : strerror(errno));
    } else {
        size_t n = r->hosts.n;
        unsigned char *down = NULL;
        if (rally__launch_hosts_merge(&r->hosts, &fresh) == 0 &&
            (down = realloc(r->down, r->hosts.n + 1)) != NULL) {
            memset(down + n, 0, r->hosts.n + 1 - n);
            r->down = down;
        }
    }
    free(text);
    rally__launch_hosts_free(&fresh);
}

/* remote_grow: while fewer workers hold places than the job is to have and
 * no joiner is on its way, start one on a host with a slot free (one that
 * could not be reached last only when no other has a slot), at most every
 * --rejoin-ms. */
static void refill(struct run *r, int64_t now)
{
    if (!remote_grow(r))
        return;
    int n = rally__launch_policy_slots(r->pol), holding = 0;
    if (r->pending >= 0 && rally__launch_policy_joining(r->pol, r->pending))
        return;
    if (r->pending >= 0 && rally__launch_policy_holds(r->pol, r->pending))
        r->down[r->host_of[r->pending]] = 0; /* taken in: its host is back */
    r->pending = -1;
    for (int i = 0; i < n; i++)
        holding += r->held[i] = (unsigned char)rally__launch_policy_holds(r->pol, i);
    if (holding >= r->want || now < r->next_try)
        return;
    r->next_try = now + r->rejoin_ms;
    reread_hostfile(r);
    int h = rally__launch_place_one(&r->hosts, r->host_of, r->held, n, r->down);
    if (h < 0)
        return;
    int i = rally__launch_policy_add(r->pol, r->max_workers);
    if (i < 0)
        return;
    r->host_of[i] = h;
    rally__launch_policy_host(r->pol, i, r->hosts.h[h].name);
    rally__launch_flush(&r->procs[i]);
    int err = spawn(r, i);
    if (err != 0) {
        struct rally__launch_act a;
        struct rally__launch_view v;
        view(r, &v);
        char why[320];
        snprintf(why, sizeof why, "cannot start rank %d on host %s: %s", i, r->hosts.h[h].name,
                 strerror(err));
        rally__launch_policy_unstarted(r->pol, i, why, 1, &v, now, &a);
        carry_out(r, &a);
        return;
    }
    r->pending = i;
    if (!r->down[h])
        rally__launch_out_say(&r->out[1],
                              "started rank %d on host %s (a slot free); the job takes it in "
                              "at its next checkpoint",
                              i, r->hosts.h[h].name);
}

/* SIGUSR2: one more worker, which the job takes in at its next checkpoint. */
static void grow(struct run *r)
{
    if (remote_grow(r)) {
        if (r->want >= r->max_workers) {
            rally__launch_out_say(&r->out[1], "SIGUSR2: the job is to have %d workers already "
                                              "(--max-workers %d): none started",
                                  r->want, r->max_workers);
            return;
        }
        r->want++;
        r->next_try = 0;
        rally__launch_out_say(&r->out[1], "SIGUSR2: the job is to have %d workers: starting one "
                                          "on a host with a slot free", r->want);
        return;
    }
    int i = r->max_workers > r->world ? rally__launch_policy_add(r->pol, r->max_workers) : -1;
    if (i < 0) {
        rally__launch_out_say(&r->out[1],
                              r->max_workers > r->world
                                  ? "SIGUSR2: the job has --max-workers %d workers (or they "
                                    "wait to join), or it is ending: none started"
                                  : "SIGUSR2: no --max-workers above -n (%d): none started",
                              r->max_workers);
        return;
    }
    int err = spawn(r, i);
    if (err != 0) {
        rally__launch_out_say(&r->out[1], "SIGUSR2: cannot start rank %d: %s", i, strerror(err));
        return;
    }
    rally__launch_out_say(&r->out[1],
                          "SIGUSR2: started rank %d; the job takes it in at its next checkpoint",
                          i);
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
        } else {
            rally__launch_signal(&r->procs[0], SIGUSR1);
            rally__launch_out_say(&r->out[1], "SIGUSR1: asked rank 0 for a snapshot (it prints "
                                              "the path once committed)");
        }
    }
    if (r->preempt_now) { /* rank 0 raises the request bit at its next checkpoint */
        r->preempt_now = 0;
        rally__launch_snaps_preempt(&r->snap, rally__now_ms(), r->grace_ms);
        rally__launch_signal(&r->procs[0], SIGUSR1);
        rally__launch_out_say(&r->out[1],
                              "SIGTERM: asked rank 0 for a snapshot at its next checkpoint; the "
                              "workers stop once it is committed (--grace-ms %lld at most)",
                              (long long)r->grace_ms);
    }
    for (; r->grow_now > 0; r->grow_now--)
        grow(r);
    char snap[sizeof r->snap.jobdir + RALLY__SNAP_NAME_MAX + 1];
    int got = r->snap.preempting ? rally__launch_snaps_preempted(&r->snap, rally__now_ms(), snap,
                                                                 sizeof snap)
                                 : 0;
    if (got > 0) {
        rally__launch_policy_preempted(r->pol, SIGTERM, snap, rally__now_ms(), &a);
        carry_out(r, &a);
    } else if (got < 0) {
        rally__launch_out_say(&r->out[1], "SIGTERM: no snapshot was committed within --grace-ms: "
                                          "stopping the workers without one");
        rally__launch_policy_signal(r->pol, SIGTERM, rally__now_ms(), &a);
        carry_out(r, &a);
    }
    for (int i = 0; i < r->nsigs; i++) {
        r->snap.preempting = 0; /* a second signal stops the job now */
        rally__launch_policy_signal(r->pol, r->sigs[i], rally__now_ms(), &a);
        carry_out(r, &a);
    }
    r->nsigs = 0;
    int i, st;
    while (r->reap &&
           (i = rally__launch_reap(r->procs, rally__launch_policy_slots(r->pol), &st)) >= 0) {
        if (--r->nlive == 0)
            r->drain_until = rally__now_ms() + DRAIN_MS;
        view(r, &v);
        if (r->procs[i].agent)
            remote_exit(r, i, st, &v, &a);
        else
            rally__launch_policy_exit(r->pol, i, st, &v, rally__now_ms(), &a);
        carry_out(r, &a);
    }
    r->reap = 0;
    view(r, &v);
    rally__launch_policy_tracker(r->pol, &v, rally__now_ms());
    refill(r, rally__now_ms());
    int k;
    while ((k = rally__launch_policy_due(r->pol, rally__now_ms())) != -1) {
        if (k == RALLY__LAUNCH_KILL_ALL)
            signal_all(r, SIGKILL);
        else
            rally__launch_signal(&r->procs[k], SIGKILL);
    }
    /* Once the job failed, its cause is printed once, by us: the workers'
     * stderr lines that repeat it (each rank heard the same ABORT and
     * reports it) are left out.  Their stdout is their data: never touched. */
    if (v.state == RALLY__TRACKER_FAILED && v.sentence[0] && !r->out[1].hide[0])
        snprintf(r->out[1].hide, sizeof r->out[1].hide, "%s",
                 rally__launch_policy_repeats(v.sentence));
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

/* --- main: parse options, set up, serve, verdict ----------------------------- */

/* One snapshot option c with its value val (NULL: a switch on the command
 * line; from the environment a switch is 0 or 1), given as name (the flag,
 * or the variable).  -1 to go on, or the exit status. */
static int snap_option(struct run *r, int c, const char *val, const char *name)
{
    int64_t v;
    switch (c) {
    case 'D':
        r->snap.dir = val;
        break;
    case 'C':
        r->snap.copy = val;
        break;
    case 'J':
        r->snap.job_opt = val;
        break;
    case 'R':
        r->snap.resume = val;
        break;
    case 'E':
    case 'T':
    case 'K':
        if (rally__parse_int(val, c == 'K' ? 1 : 0, INT64_MAX / 4, &v))
            return cli_usage_error("rally-run", "%s wants %s, not '%s'", name,
                                   c == 'E'   ? "a number of versions"
                                   : c == 'T' ? "milliseconds"
                                              : "a count (1 or more)",
                                   val);
        *(c == 'E' ? &r->snap.every : c == 'T' ? &r->snap.every_ms : &r->snap.keep) = v;
        break;
    case 'B':
        if (strcmp(val, "wait") != 0 && strcmp(val, "skip") != 0)
            return cli_usage_error("rally-run", "%s wants wait or skip, not '%s'", name, val);
        r->snap.busy = val;
        break;
    default: /* 'Q', 'F', 'f', 'V': switches */
        if (val != NULL && strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
            return cli_usage_error("rally-run", "%s wants 0 or 1, not '%s'", name, val);
        if (val == NULL || val[0] == '1')
            *(c == 'Q'   ? &r->snap.required
              : c == 'F' ? &r->snap.final
              : c == 'V' ? &r->snap.local
                         : &r->snap.force) = 1;
        break;
    }
    return -1;
}

/* The snapshot settings of rally-run's environment (snap_env), after the
 * command line: each is taken as its flag when that was not given (an
 * empty value is no value).  -1 to go on, or the exit status. */
static int env_options(struct run *r)
{
    for (size_t i = 0; i < NSNAP_ENV; i++) {
        const char *val = getenv(snap_env[i].var);
        if (val == NULL || !*val)
            continue;
        if (snap_env[i].opt == 0)
            return cli_usage_error("rally-run",
                                   "%s=%s is in the environment, but rally-run makes a fresh "
                                   "one for every run (its snapshots, lock and clean-up go by "
                                   "it): unset it",
                                   snap_env[i].var, val);
        if (r->given[snap_env[i].opt])
            continue; /* the flag wins, as an argument wins over the environment */
        int st = snap_option(r, snap_env[i].opt, val, snap_env[i].var);
        if (st >= 0)
            return st;
        if (!r->env_snap[0] && snap_env[i].opt != 'D')
            snprintf(r->env_snap, sizeof r->env_snap, "%s=%.100s", snap_env[i].var, val);
    }
    return -1;
}

/* -x VAR or -x VAR=VALUE (mpirun's spelling): every worker gets VAR, with
 * rally-run's value or VALUE, under every launcher.  -1 or the exit status. */
static int export_option(struct run *r, const char *arg)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    int ok = n > 0 && !(arg[0] >= '0' && arg[0] <= '9');
    for (size_t i = 0; i < n && ok; i++)
        ok = arg[i] == '_' || (arg[i] >= 'A' && arg[i] <= 'Z') ||
             (arg[i] >= 'a' && arg[i] <= 'z') || (arg[i] >= '0' && arg[i] <= '9');
    if (!ok)
        return cli_usage_error("rally-run",
                               "-x wants VAR or VAR=VALUE (VAR of letters, digits "
                               "and '_'), not '%s'",
                               arg);
    long own = owned(arg, n);
    if (own >= 0)
        return cli_usage_error(
            "rally-run", "-x %.*s: rally-run sets %.*s for every worker itself%s%s", (int)n, arg,
            (int)n, arg, own < (long)NSNAP_ENV && snap_env[own].flag ? "; give " : "",
            own < (long)NSNAP_ENV && snap_env[own].flag ? snap_env[own].flag : "");
    const char *val = eq ? eq + 1 : getenv(arg);
    if (val == NULL)
        return cli_usage_error("rally-run",
                               "-x %s: %s is not set in rally-run's environment "
                               "(-x %s=VALUE gives it a value)",
                               arg, arg, arg);
    size_t i = r->nxenv;
    char **x = realloc(r->xenv, (i + 2) * sizeof *x), **k = NULL;
    if (x != NULL) {
        r->xenv = x;
        x[i] = NULL; /* both lists stay NULL-terminated for rally__launch_argv_free */
        if ((k = realloc(r->xkey, (i + 2) * sizeof *k)) != NULL) {
            r->xkey = k;
            k[i] = NULL;
        }
    }
    if (k == NULL || (k[i] = strndup(arg, n)) == NULL ||
        (x[i] = malloc(n + 1 + strlen(val) + 1)) == NULL)
        return cli_usage_error("rally-run", "out of memory");
    sprintf(x[i], "%s=%s", k[i], val);
    x[i + 1] = k[i + 1] = NULL;
    r->nxenv = i + 1;
    return -1;
}

/* Returns -1 to go on, or the exit status. */
static int parse(int argc, char **argv, struct run *r)
{
    static const struct option longs[] = {{"workers", required_argument, NULL, 'n'},
                                          {"host", required_argument, NULL, 'H'},
                                          {"bind", required_argument, NULL, 'H'},
                                          {"port", required_argument, NULL, 'p'},
                                          {"startup-timeout-ms", required_argument, NULL, 's'},
                                          {"grace-ms", required_argument, NULL, 'g'},
                                          {"max-restarts", required_argument, NULL, 'm'},
                                          {"min-workers", required_argument, NULL, 'N'},
                                          {"max-workers", required_argument, NULL, 'M'},
                                          {"rejoin-ms", required_argument, NULL, 'j'},
                                          {"heartbeat-timeout-ms", required_argument, NULL, 'b'},
                                          {"progress-timeout-ms", required_argument, NULL, 'P'},
                                          {"on-stuck", required_argument, NULL, 'S'},
                                          {"snapshot-dir", required_argument, NULL, 'D'},
                                          {"snapshot-copy", required_argument, NULL, 'C'},
                                          {"job", required_argument, NULL, 'J'},
                                          {"snapshot-every", required_argument, NULL, 'E'},
                                          {"snapshot-every-ms", required_argument, NULL, 'T'},
                                          {"snapshot-keep", required_argument, NULL, 'K'},
                                          {"snapshot-required", no_argument, NULL, 'Q'},
                                          {"snapshot-local", no_argument, NULL, 'V'},
                                          {"snapshot-final", no_argument, NULL, 'F'},
                                          {"keep-snapshots", no_argument, NULL, 'k'},
                                          {"resume", required_argument, NULL, 'R'},
                                          {"overwrite", no_argument, NULL, 'O'},
                                          {"force", no_argument, NULL, 'f'},
                                          {"auto-resume", no_argument, NULL, 'A'},
                                          {"snapshot-busy", required_argument, NULL, 'B'},
                                          {"max-job-restarts", required_argument, NULL, 'X'},
                                          {"output-buffer-bytes", required_argument, NULL, 'U'},
                                          {"launcher", required_argument, NULL, 'L'},
                                          {"hosts", required_argument, NULL, 'W'},
                                          {"hostfile", required_argument, NULL, 'Y'},
                                          {"ssh-option", required_argument, NULL, 'o'},
                                          {"agent", required_argument, NULL, 'G'},
                                          {"dry-run", no_argument, NULL, 'd'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    r->host = NULL; /* resolve_bind: by the launcher */
    r->startup_ms = 60000;
    r->grace_ms = 3000;
    r->max_restarts = 3;
    r->heartbeat_ms = 10000;
    r->progress_ms = 600000;
    r->snap.keep = 2;
    r->max_job_restarts = 3;
    r->snap.busy = "wait";
    r->rejoin_ms = 5000;
    int64_t v;
    int c, li = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+n:hx:", longs, &li)) != -1) {
        r->given[c & 127] = 1;
        switch (c) {
        case 'n':
            /* -np N, mpirun's spelling: getopt read "-np" as -n with the value "p" */
            if (strcmp(argv[optind - 1], "-np") == 0 && optind < argc)
                optarg = argv[optind++];
            if (rally__parse_int(optarg, 1, RALLY__WORLD_MAX, &v))
                return cli_usage_error("rally-run",
                                       "-n wants a number of workers from 1 to %d, not '%s'",
                                       RALLY__WORLD_MAX, optarg);
            r->world = (int)v;
            break;
        case 'H':
            r->host = optarg;
            break;
        case 'p':
            if (rally__parse_int(optarg, 0, 65535, &v))
                return cli_usage_error("rally-run", "--port wants 0..65535, not '%s'", optarg);
            r->port = (int)v;
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
            *(c == 's' ? &r->startup_ms : c == 'g' ? &r->grace_ms : &r->heartbeat_ms) = v;
            break;
        case 'P':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error("rally-run",
                                       "--progress-timeout-ms wants milliseconds, not '%s'",
                                       optarg);
            r->progress_ms = v;
            break;
        case 'S':
            if (strcmp(optarg, "restart") != 0 && strcmp(optarg, "fail") != 0)
                return cli_usage_error("rally-run", "--on-stuck wants restart or fail, not '%s'",
                                       optarg);
            r->stuck_fail = strcmp(optarg, "fail") == 0;
            break;
        case 'm':
            if (rally__parse_int(optarg, 0, INT_MAX, &v))
                return cli_usage_error(
                    "rally-run", "--max-restarts wants a count (0 or more), not '%s'", optarg);
            r->max_restarts = (int)v;
            break;
        case 'j':
            if (rally__parse_int(optarg, 1, INT_MAX, &v))
                return cli_usage_error("rally-run", "--rejoin-ms wants milliseconds (1 or more), "
                                                    "not '%s'", optarg);
            r->rejoin_ms = v;
            break;
        case 'N':
        case 'M':
            if (rally__parse_int(optarg, 1, RALLY__WORLD_MAX, &v))
                return cli_usage_error("rally-run", "--%s wants a number of workers, not '%s'",
                                       c == 'N' ? "min-workers" : "max-workers", optarg);
            *(c == 'N' ? &r->min_workers : &r->max_workers) = (int)v;
            break;
        case 'D':
        case 'C':
        case 'J':
        case 'R':
        case 'E':
        case 'T':
        case 'K':
        case 'Q':
        case 'V':
        case 'F':
        case 'f':
        case 'B': {
            char name[40];
            snprintf(name, sizeof name, "--%s", longs[li].name);
            int st = snap_option(r, c, optarg, name);
            if (st >= 0)
                return st;
            break;
        }
        case 'k':
            r->snap.keep_all = 1;
            break;
        case 'O':
            r->snap.overwrite = 1;
            break;
        case 'A':
            r->auto_resume = 1;
            break;
        case 'U':
            if (rally__parse_int(optarg, 4096, INT64_MAX / 4, &v))
                return cli_usage_error("rally-run",
                                       "--output-buffer-bytes wants bytes (4096 or more), not '%s'",
                                       optarg);
            r->out_bytes = v;
            break;
        case 'X':
            if (rally__parse_int(optarg, 0, INT_MAX, &v))
                return cli_usage_error(
                    "rally-run", "--max-job-restarts wants a count (0 or more), not '%s'", optarg);
            r->max_job_restarts = (int)v;
            break;
        case 'L':
            if ((r->launcher = rally__launch_launcher(optarg)) < 0)
                return cli_usage_error("rally-run",
                                       "--launcher wants local, ssh, slurm or mpirun, not '%s'",
                                       optarg);
            break;
        case 'W':
            r->hosts_opt = optarg;
            break;
        case 'Y':
            r->hostfile = optarg;
            break;
        case 'o': {
            const char **o = realloc(r->ssh_opts, (r->nssh_opts + 1) * sizeof *o);
            if (o == NULL)
                return cli_usage_error("rally-run", "out of memory");
            r->ssh_opts = o;
            r->ssh_opts[r->nssh_opts++] = optarg;
            break;
        }
        case 'G':
            r->agent_opt = optarg;
            break;
        case 'x': {
            int st = export_option(r, optarg);
            if (st >= 0)
                return st;
            break;
        }
        case 'd':
            r->dry_run = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage_error("rally-run", "unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    int st = env_options(r);
    if (st >= 0)
        return st;
    if (r->world == 0)
        return cli_usage_error("rally-run", "-n N (the number of workers) is required");
    if (optind >= argc)
        return cli_usage_error("rally-run", "no program to run");
    r->argv = argv + optind;
    if (r->min_workers > r->world)
        return cli_usage_error("rally-run", "--min-workers %d is more than the %d workers (-n)",
                               r->min_workers, r->world);
    if (r->min_workers == 0)
        r->min_workers = r->world;
    if (r->max_workers == 0)
        r->max_workers = r->world;
    if (r->max_workers < r->world)
        return cli_usage_error("rally-run", "--max-workers %d is fewer than the %d workers (-n)",
                               r->max_workers, r->world);
    if (r->max_workers > r->world && r->launcher != RALLY__LAUNCHER_LOCAL &&
        r->launcher != RALLY__LAUNCHER_SSH)
        return cli_usage_error("rally-run", "--max-workers above -n is for --launcher local and "
                                            "ssh");
    if (r->given['j'] && !remote_grow(r))
        return cli_usage_error("rally-run", "--rejoin-ms is for --launcher ssh with --max-workers");
    /* room for the ranks taken in too, a few times over (each gets a slot of
     * its own; a joiner that could not be started gives its slot back) */
    r->slots = r->world + 4 * (r->max_workers - r->world) + (remote_grow(r) ? 2 * r->max_workers : 0);
    r->want = r->world;
    r->pending = -1;
    if (elastic(r) && r->snap.copy != NULL)
        return cli_usage_error("rally-run", "--min-workers below -n does not go with "
                                            "--snapshot-copy yet: the second tier's copy does "
                                            "not follow a change of the workers");
    /* the interval the workers will beat at (an argument wins over the
     * environment, as in rally_init) must be under the tracker's timeout */
    if (r->heartbeat_ms > 0) {
        const char *hb = getenv("RALLY_HEARTBEAT_MS"), *key = "RALLY_HEARTBEAT_MS";
        for (size_t i = 0; i < r->nxenv; i++)
            if (strcmp(r->xkey[i], key) == 0)
                hb = r->xenv[i] + strlen(key) + 1;
        for (char **a = r->argv + 1; *a; a++)
            if (strncmp(*a, "rally_heartbeat_ms=", 19) == 0)
                hb = *a + 19, key = "rally_heartbeat_ms";
        int64_t iv = 1000; /* the library's default (src/util/config.c) */
        char from[64] = "the default, 1000 ms";
        if (hb != NULL && rally__parse_int(hb, 1, INT64_MAX / 4, &iv) == 0)
            snprintf(from, sizeof from, "%s=%s", key, hb);
        if (iv >= r->heartbeat_ms)
            return cli_usage_error("rally-run",
                                   "the workers' heartbeat interval (%s) is at or above "
                                   "--heartbeat-timeout-ms %lld: the tracker would fence every "
                                   "healthy worker; lower the interval or raise the timeout",
                                   from, (long long)r->heartbeat_ms);
    }
    if (r->snap.dir == NULL &&
        (r->snap.every || r->snap.every_ms || r->snap.required || r->snap.final || r->snap.keep_all ||
         r->snap.overwrite || r->snap.job_opt || r->auto_resume || r->snap.copy || r->snap.local))
        return cli_usage_error("rally-run", "the snapshot options need --snapshot-dir DIR%s%s%s",
                               r->env_snap[0] ? " (" : "", r->env_snap,
                               r->env_snap[0] ? " is one)" : "");
    if (r->snap.resume != NULL && strcmp(r->snap.resume, "latest") == 0 && r->snap.dir == NULL)
        return cli_usage_error("rally-run", "%s needs --snapshot-dir DIR",
                               r->given['R'] ? "--resume latest" : "RALLY_RESUME=latest");
    if (r->snap.local && r->snap.copy == NULL)
        return cli_usage_error("rally-run", "--snapshot-local needs --snapshot-copy: with a "
                                            "directory private to each host, no host holds a "
                                            "whole snapshot, only the copy does");
    if (r->snap.overwrite && r->snap.resume != NULL)
        return cli_usage_error("rally-run", "--overwrite is for a fresh start, not --resume");
    int local = r->launcher == RALLY__LAUNCHER_LOCAL;
    if (local && (r->hosts_opt || r->hostfile || r->agent_opt))
        return cli_usage_error("rally-run", "--hosts, --hostfile and --agent are for --launcher "
                                            "ssh, slurm or mpirun");
    if (r->nssh_opts > 0 && r->launcher != RALLY__LAUNCHER_SSH)
        return cli_usage_error("rally-run", "--ssh-option is for --launcher ssh");
    if (r->hosts_opt && r->hostfile)
        return cli_usage_error("rally-run", "give --hosts or --hostfile, not both");
    if (r->launcher == RALLY__LAUNCHER_SSH && !r->hosts_opt && !r->hostfile)
        return cli_usage_error("rally-run", "--launcher ssh needs --hosts or --hostfile");
    return -1;
}

/* Reads all of the file path into a malloc'd string; NULL with errno. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    char buf[4096];
    size_t k;
    while (m != NULL && (k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, m);
    int bad = ferror(f);
    fclose(f);
    if (m == NULL || fclose(m) != 0 || bad) {
        free(text);
        errno = bad ? EIO : ENOMEM;
        return NULL;
    }
    return text;
}

/* Slurm: the allocation's nodes (SLURM_JOB_NODELIST through `scontrol show
 * hostnames`) and their slots (SLURM_TASKS_PER_NODE).  0 or the exit status. */
static int slurm_hosts(struct run *r)
{
    const char *list = getenv("SLURM_JOB_NODELIST"), *tpn = getenv("SLURM_TASKS_PER_NODE");
    if (list == NULL || !*list) {
        fprintf(stderr, "rally-run: --launcher slurm runs inside a Slurm allocation (salloc, "
                        "sbatch): SLURM_JOB_NODELIST is not set; or give --hosts\n");
        return 2;
    }
    char *quoted = rally__launch_quote(list), *cmd = NULL;
    if (quoted == NULL || asprintf(&cmd, "scontrol show hostnames %s", quoted) < 0) {
        free(quoted);
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    free(quoted);
    FILE *f = popen(cmd, "r");
    free(cmd);
    char line[RALLY__LAUNCH_HOST_MAX + 2], err[256] = "";
    int bad = f == NULL;
    while (!bad && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] && rally__launch_hosts_parse(&r->hosts, line, err, sizeof err) != 0)
            bad = 1;
    }
    int st = f ? pclose(f) : -1;
    if (bad || st != 0 || r->hosts.n == 0) {
        fprintf(stderr, "rally-run: cannot expand SLURM_JOB_NODELIST=%s with `scontrol show "
                        "hostnames`%s%s\n", list, err[0] ? ": " : "", err);
        return 1;
    }
    if (tpn != NULL && *tpn && rally__launch_slurm_slots(&r->hosts, tpn, err, sizeof err) != 0) {
        fprintf(stderr, "rally-run: %s\n", err);
        return 1;
    }
    return 0;
}

/* The hosts, each rank's host and rally-agent's path (non-local launchers).
 * 0 or the exit status. */
static int place(struct run *r)
{
    if (r->launcher == RALLY__LAUNCHER_LOCAL)
        return 0;
    char err[512] = "";
    if (r->hosts_opt && rally__launch_hosts_parse(&r->hosts, r->hosts_opt, err, sizeof err) != 0)
        return cli_usage_error("rally-run", "--hosts %s: %s", r->hosts_opt, err);
    if (r->hostfile) {
        char *text = slurp(r->hostfile);
        if (text == NULL) {
            fprintf(stderr, "rally-run: --hostfile %s: %s\n", r->hostfile, strerror(errno));
            return 2;
        }
        int rc = rally__launch_hostfile_parse(&r->hosts, text, err, sizeof err);
        free(text);
        if (rc != 0)
            return cli_usage_error("rally-run", "--hostfile %s: %s", r->hostfile, err);
    }
    if (r->hosts.n == 0 && r->launcher == RALLY__LAUNCHER_SLURM) {
        int st = slurm_hosts(r);
        if (st != 0)
            return st;
    }
    if (r->hosts.n == 0 && r->launcher == RALLY__LAUNCHER_MPIRUN) {
        char every[32];
        snprintf(every, sizeof every, "localhost:%d", r->world);
        rally__launch_hosts_parse(&r->hosts, every, err, sizeof err);
    }
    r->host_of = calloc((size_t)r->slots, sizeof *r->host_of);
    r->held = calloc((size_t)r->slots, 1);
    r->down = calloc(r->hosts.n + 1, 1);
    if (r->host_of == NULL || r->held == NULL || r->down == NULL) {
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    if (rally__launch_place(&r->hosts, r->world, r->host_of, err, sizeof err) != 0)
        return cli_usage_error("rally-run", "%s", err);
    if (r->agent_opt) {
        snprintf(r->agent, sizeof r->agent, "%s", r->agent_opt);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "rally-run: cannot find rally-agent beside rally-run (%s); give --agent "
                        "PATH\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(r->agent, sizeof r->agent, "%.*s/rally-agent", PATH_MAX - 16, self);
    return 0;
}

/* The address the workers reach the tracker at; port as given. */
static void tracker_address(struct run *r, int port)
{
    char name[RALLY__HOST_MAX] = "127.0.0.1";
    const char *h = r->bind;
    if (rally__launch_host_is_any(h)) {
        /* every worker runs here; on other hosts they need an address of
         * this host that is not loopback */
        if (r->launcher != RALLY__LAUNCHER_LOCAL)
            rally__sock_primary_addr(name, sizeof name);
        h = name;
    }
    rally__hostport_fmt(h, port, r->tracker_addr, sizeof r->tracker_addr);
}

/* A tracker on loopback cannot be reached from another machine: say so
 * once, before anything starts (the job would fail at the start timeout). */
static void check_reach(const struct run *r)
{
    if (r->launcher == RALLY__LAUNCHER_LOCAL || !rally__host_is_loopback(r->bind))
        return;
    char self[RALLY__LAUNCH_HOST_MAX] = "";
    gethostname(self, sizeof self - 1);
    for (size_t i = 0; i < r->hosts.n; i++)
        if (!rally__host_is_loopback(r->hosts.h[i].name) &&
            strcmp(r->hosts.h[i].name, self) != 0) {
            fprintf(stderr,
                    "rally-run: note: the tracker listens on %s, which workers on host %s "
                    "cannot reach from another machine; give --host ADDR (an address of this "
                    "host that they reach)\n",
                    r->host, r->hosts.h[i].name);
            return;
        }
}

/* --bind (--host): an interface name becomes its address (r->bind); none
 * given: loopback for local workers, every address for remote ones.  0 or
 * the exit status. */
static int resolve_bind(struct run *r)
{
    struct rally__err e = {0, ""};
    if (r->host == NULL) /* remote workers must reach it: every address */
        r->host = r->launcher == RALLY__LAUNCHER_LOCAL ? "127.0.0.1" : "*";
    if (rally__sock_bind_addr(r->host, r->bind, sizeof r->bind, &e) == RALLY_OK)
        return 0;
    fprintf(stderr, "rally-run: --bind %s: %s\n", r->host, e.msg);
    return 1;
}

/* --dry-run: each rank's local command line; nothing starts.  The exit status. */
static int dry_run(struct run *r)
{
    tracker_address(r, r->port);
    for (int i = 0; i < r->world; i++) {
        char **argv = r->launcher == RALLY__LAUNCHER_LOCAL ? NULL : command(r, i);
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
    struct rally__err e = {0, ""};
    struct rally__secret s;
    if (rally__secret_create(r->secret, &s, &e) != RALLY_OK) {
        r->secret[0] = '\0';
        fprintf(stderr, "rally-run: %s\n", e.msg);
        return 1;
    }
    /* the agents read the secret's line on their stdin (launch/remote.h) */
    if (r->launcher != RALLY__LAUNCHER_LOCAL && (r->feed = slurp(r->secret)) == NULL) {
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
    if (r->procs == NULL || r->slot == NULL ||
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
        if (r->launcher != RALLY__LAUNCHER_LOCAL && i < r->world)
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
    tracker_address(r, rally__tracker_port(r->t));
    for (int i = 0; i < r->world; i++) {
        err = spawn(r, i);
        if (err != 0) {
            static const char *const wrapper[] = {NULL, "ssh", "srun", "mpirun"};
            fprintf(stderr, "rally-run: cannot run '%s': %s\n",
                    wrapper[r->launcher] ? wrapper[r->launcher] : r->argv[0], strerror(err));
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
        for (int w = 0; w < 2; w++)
            if (r->procs[i].fd[w] >= 0)
                close(r->procs[i].fd[w]);
        if (r->procs[i].ctl >= 0)
            close(r->procs[i].ctl);
    }
    rally__tracker_free(r->t);
    rally__launch_policy_free(r->pol);
    free(r->procs);
    free(r->slot);
    if (r->secret[0])
        unlink(r->secret);
    for (int i = 0; r->dir[0] && r->launcher == RALLY__LAUNCHER_MPIRUN && i < r->world; i++) {
        char sess[sizeof r->dir + 32]; /* OpenMPI emptied it, unless its mpirun was killed */
        session_dir(r, i, sess, sizeof sess);
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
    rally__launch_hosts_free(&r->hosts);
    free(r->host_of);
    free(r->held);
    free(r->down);
    free(r->ssh_opts);
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
    int status = parse(argc, argv, &r);
    if (status < 0 && (status = resolve_bind(&r)) == 0 && (status = place(&r)) == 0)
        status = -1;
    if (status < 0 && r.dry_run) {
        status = rally__launch_snaps_setup(&r.snap, r.argv, r.world, 1);
        if (status == 0)
            status = dry_run(&r);
    }
    if (status >= 0) {
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
    check_reach(&r);
    if ((status = rally__launch_snaps_setup(&r.snap, r.argv, r.world, 0)) != 0)
        goto cleanup;
    for (;;) {
        status = setup(&r);
        if (status != 0)
            goto cleanup;
        struct rally__launch_owner owner = {.arg = &r,
                                            .nfds = 2 * (size_t)r.slots + 2, /* pipes, outputs */
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
        view(&r, &v);
        status = verdict(&r, &v, hidden);
        /* a failure (not a signal, not an unrunnable program) may restart the job */
        if (status == 1 && r.auto_resume && r.job_restarts < r.max_job_restarts &&
            rally__launch_snaps_auto(&r.snap, r.job_restarts + 1, r.max_job_restarts)) {
            r.job_restarts++;
            r.prev_pol = r.pol; /* the next attempt's summary carries its counts */
            r.pol = NULL;
            job_teardown(&r);
            continue;
        }
        if (status == 1 && r.auto_resume && r.job_restarts == r.max_job_restarts)
            fprintf(stderr, "rally-run: auto-resume: %d job restart%s spent (--max-job-restarts)\n",
                    r.job_restarts, r.job_restarts == 1 ? "" : "s");
        rally__launch_snaps_cleanup(&r.snap, status);
        rally__launch_policy_summary(r.pol, stderr);
        break;
    }
cleanup:
    teardown(&r);
    return status;
}
