/*
 * options.c — rally-run's usage text and command line (run/run.h): every
 * flag into struct run, the snapshot settings taken from the environment,
 * and -x.
 *
 * The flags are one table, FLAGS: a row is a flag's long name, its letter
 * (its key in r->given and getopt's value; -n, -x and -h are also short
 * options), its value's name, its usage lines and how its value is taken (a
 * setter and the field, a number's range and what its error says it
 * wants).  getopt's long options, the usage text and the parsing are all
 * made from the rows, so a new flag is one row (and its field in struct
 * run).  A row without a name is text of the usage between flags.  The
 * checks between flags come after the loop, in run/checks.c.
 */
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run/run.h"
#include "tracker/proto.h"

/* The snapshot settings rally-run owns (docs/config.md): the workers' library
 * reads them as RALLY_* variables, but rally-run keeps the run's id, the job
 * directory's lock and the clean-up, so in its own environment it takes each
 * as the flag beside it, where that flag is not given (env_options), and every
 * worker, under every launcher, gets rally-run's value and never the one of
 * the environment.  RALLY_RUN_ID and RALLY_RUN_STARTED have no flag: every
 * run makes its own, so either in the environment is refused. */
const struct run_env_opt run_snap_env[] = {
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
const size_t run_nsnap_env = sizeof run_snap_env / sizeof run_snap_env[0];

/* The name of "K=V" (or "K") is one rally-run sets for every worker itself:
 * its entry in run_snap_env, or one of the wiring every worker gets (-1:
 * not ours). */
long run_owned(const char *kv, size_t n)
{
    static const char *const wiring[] = {"RALLY_TRACKER", "RALLY_SECRET_FILE", "RALLY_TASK_ID",
                                         "RALLY_ELASTIC", "RALLY_MOCK_DEATHS"};
    for (size_t i = 0; i < run_nsnap_env; i++)
        if (strlen(run_snap_env[i].var) == n && strncmp(kv, run_snap_env[i].var, n) == 0)
            return (long)i;
    for (size_t i = 0; i < sizeof wiring / sizeof wiring[0]; i++)
        if (strlen(wiring[i]) == n && strncmp(kv, wiring[i], n) == 0)
            return (long)run_nsnap_env;
    return -1;
}

struct flag;
/* Takes val (NULL: a switch given on the command line) for f, named as in
 * errors (the flag, or the environment's variable).  -1 to go on, or the
 * exit status. */
typedef int set_fn(struct run *r, const struct flag *f, const char *val, const char *as);

/* One flag, or (name and shown NULL, set NULL) a piece of the usage's text. */
struct flag {
    const char *name;  /* --NAME */
    int letter;        /* r->given[letter], getopt's value */
    int dash;          /* also -LETTER */
    const char *arg;   /* the value's name in the usage, NULL: a switch; pick's choices */
    const char *shown; /* the usage's left column, when not "[-L, ]--NAME ARG" */
    const char *help;  /* the usage's lines ('\n' between), or the text */
    set_fn *set;       /* NULL: in the usage only */
    size_t at;         /* the field: offsetof(struct run, ...) */
    int64_t min, max;  /* a number's range; help and wants may name max as %lld */
    const char *wants; /* a number's (or text's) error: "--port wants 0..65535, not 'x'" */
    size_t size;       /* a number's field: sizeof (int or int64_t) */
};

#define FIELD(f) offsetof(struct run, f)
#define SIZE(f) sizeof(((struct run *)0)->f)
#define MS (INT64_MAX / 4) /* milliseconds and bytes: far from overflowing a sum */
/* The rows' shapes: a number in lo..hi (into an int or int64_t field); a value (text, or
 * pick's choices, arg); a switch; a value for a setter of its own; the
 * usage's text between flags.  -n, -x, -h and --version are spelled out. */
#define NUM(name, c, arg, help, field, lo, hi, wants)                                              \
    {                                                                                              \
        name, c, 0, arg, NULL, help, num, FIELD(field), lo, hi, wants, SIZE(field)                 \
    }
#define ARG(name, c, arg, help, set, field, wants)                                                 \
    {                                                                                              \
        name, c, 0, arg, NULL, help, set, FIELD(field), 0, 0, wants, 0                             \
    }
#define SWITCH(name, c, help, field)                                                               \
    {                                                                                              \
        name, c, 0, NULL, NULL, help, on, FIELD(field), 0, 0, NULL, 0                              \
    }
#define DO(name, c, arg, help, set)                                                                \
    {                                                                                              \
        name, c, 0, arg, NULL, help, set, 0, 0, 0, NULL, 0                                         \
    }
#define TEXT(text)                                                                                 \
    {                                                                                              \
        NULL, 0, 0, NULL, NULL, text, NULL, 0, 0, 0, NULL, 0                                       \
    }

/* The field of f in r. */
static void *at(struct run *r, const struct flag *f)
{
    return (char *)r + f->at;
}

/* val as a number in f's range into *v; else says what f wants.  -1 to go
 * on, or the exit status. */
static int number(const struct flag *f, const char *val, const char *as, int64_t *v)
{
    if (rally__parse_int(val, f->min, f->max, v) == 0)
        return -1;
    char wants[128];
    snprintf(wants, sizeof wants, f->wants, (long long)f->max);
    return cli_usage_error("rally-run", "%s wants %s, not '%s'", as, wants, val);
}

/* A number into its field, an int or an int64_t (the row's size says). */
static int num(struct run *r, const struct flag *f, const char *val, const char *as)
{
    int64_t v;
    int st = number(f, val, as, &v);
    if (st < 0 && f->size == sizeof(int))
        *(int *)at(r, f) = (int)v;
    else if (st < 0)
        *(int64_t *)at(r, f) = v;
    return st;
}

/* The value itself (const char *); with wants, an empty one is refused. */
static int text(struct run *r, const struct flag *f, const char *val, const char *as)
{
    if (f->wants != NULL && *val == '\0')
        return cli_usage_error("rally-run", "%s wants %s", as, f->wants);
    *(const char **)at(r, f) = val;
    return -1;
}

/* --give-up-slow PCT[:CALLS]: PCT 1..100 into the field as a share, CALLS
 * (default 200) beside it. */
static int slow_option(struct run *r, const struct flag *f, const char *val, const char *as)
{
    (void)f;
    char pct[32];
    const char *colon = strchr(val, ':');
    size_t n = colon ? (size_t)(colon - val) : strlen(val);
    int64_t p, calls = 200;
    if (n >= sizeof pct)
        n = sizeof pct - 1;
    memcpy(pct, val, n);
    pct[n] = '\0';
    if (rally__parse_int(pct, 1, 100, &p) != 0 ||
        (colon && rally__parse_int(colon + 1, 1, 1000000000, &calls) != 0))
        return cli_usage_error("rally-run",
                               "%s wants PCT[:CALLS], a percent 1..100 and a number of calls, "
                               "not '%s'",
                               as, val);
    r->give_up_slow = (double)p / 100;
    r->give_up_calls = calls;
    return -1;
}

/* A switch: 1 when given; from the environment 0 or 1. */
static int on(struct run *r, const struct flag *f, const char *val, const char *as)
{
    if (val != NULL && strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
        return cli_usage_error("rally-run", "%s wants 0 or 1, not '%s'", as, val);
    if (val == NULL || val[0] == '1')
        *(int *)at(r, f) = 1;
    return -1;
}

/* Which of f->arg's choices ("restart|fail") val is; else says so, -1. */
static int choice(const struct flag *f, const char *val, const char *as)
{
    char list[128] = "";
    size_t len = 0, n = strlen(f->arg);
    int i = 0, k = 0;
    for (const char *p = f->arg; p <= f->arg + n; k++) {
        size_t w = strcspn(p, "|");
        if (strlen(val) == w && strncmp(val, p, w) == 0)
            return k;
        p += w + 1;
    }
    for (const char *p = f->arg; p <= f->arg + n; i++) {
        size_t w = strcspn(p, "|");
        const char *sep = i == 0 ? "" : i + 1 == k ? " or " : ", ";
        int m = snprintf(list + len, sizeof list - len, "%s%.*s", sep, (int)w, p);
        len += m > 0 && (size_t)m < sizeof list - len ? (size_t)m : 0;
        p += w + 1;
    }
    cli_usage_error("rally-run", "%s wants %s, not '%s'", as, list, val);
    return -1;
}

/* One of f->arg's choices: its index into an int field. */
static int pick(struct run *r, const struct flag *f, const char *val, const char *as)
{
    int k = choice(f, val, as);
    if (k < 0)
        return 2;
    *(int *)at(r, f) = k;
    return -1;
}

/* One of f->arg's choices: itself into a const char * field. */
static int pick_text(struct run *r, const struct flag *f, const char *val, const char *as)
{
    if (choice(f, val, as) < 0)
        return 2;
    *(const char **)at(r, f) = val;
    return -1;
}

/* --launcher: a kind of launch/kind.h by its name. */
static int launcher(struct run *r, const struct flag *f, const char *val, const char *as)
{
    const struct rally__launch_kind *k = rally__launch_kind_named(val);
    if (k != NULL) {
        r->kind = k;
        return -1;
    }
    char all[128];
    rally__launch_kind_list(all, sizeof all, NULL, "or");
    return cli_usage_error("rally-run", "%s wants %s, not '%s'", as, all, val);
}

/* --ssh-option: one more. */
static int ssh_option(struct run *r, const struct flag *f, const char *val, const char *as)
{
    const char **o = realloc(r->ssh_opts, (r->nssh_opts + 1) * sizeof *o);
    if (o == NULL)
        return cli_usage_error("rally-run", "out of memory");
    r->ssh_opts = o;
    r->ssh_opts[r->nssh_opts++] = val;
    return -1;
}

/* -x VAR[=VALUE] (below). */
static int export_option(struct run *r, const struct flag *f, const char *arg, const char *as);

static void usage(FILE *f);

/* --help: the usage on stdout, and exit 0. */
static int help(struct run *r, const struct flag *f, const char *val, const char *as)
{
    usage(stdout);
    return 0;
}

static const struct flag FLAGS[] = {
    {"workers", 'n', 1, "N", "-n, -np, --workers N", "number of workers (1..%lld)", num,
     FIELD(world), 1, RALLY__WORLD_MAX, "a number of workers from 1 to %lld", SIZE(world)},
    ARG("bind", 'H', "ADDR|IFACE",
        "tracker bind address, or an interface's first\n"
        "address ([v6] or bare v6; default 127.0.0.1 with the\n"
        "local launcher, every address with the others)",
        text, host, NULL),
    ARG("host", 'H', "H", "the same as --bind", text, host, NULL),
    NUM("port", 'p', "P", "tracker port (default 0: any free port)", port, 0, 65535, "0..65535"),
    NUM("startup-timeout-ms", 's', "T",
        "every worker must join (and a restarted one\n"
        "rejoin) within T ms (default 60000)",
        startup_ms, 0, MS, "milliseconds"),
    NUM("grace-ms", 'g', "G",
        "after a failure or a signal, workers get G ms to exit\n"
        "before SIGKILL (default 3000)",
        grace_ms, 0, MS, "milliseconds"),
    NUM("max-restarts", 'm', "K",
        "restart each rank at most K times (default 3; 0: the\n"
        "first worker death fails the job)",
        max_restarts, 0, INT_MAX, "a count (0 or more)"),
    NUM("min-workers", 'N', "M",
        "elastic: a rank that cannot come back (its restarts\n"
        "spent) is given up and the others go on without it from\n"
        "the newest checkpoint, renumbered, while at least M are\n"
        "left (default N: the job fails; docs/recovery.md)",
        min_workers, 1, RALLY__WORLD_MAX, "a number of workers"),
    NUM("max-workers", 'M', "M",
        "elastic: SIGUSR2 to rally-run starts one more worker,\n"
        "which the job takes in at its next checkpoint, up to M\n"
        "(default N).  With --launcher ssh the worker goes to a\n"
        "host with a slot free, and slots freed by ranks given\n"
        "up (their host gone) are filled again once a host\n"
        "answers, as many as its free slots at one try",
        max_workers, 1, RALLY__WORLD_MAX, "a number of workers"),
    ARG("give-up-slow", 'l', "PCT[:CALLS]",
        "elastic: give up a rank that arrives PCT % after the\n"
        "median or later (docs/status.md) while it makes CALLS\n"
        "calls (default 200), as one that cannot come back: on a\n"
        "slow host all its ranks.  Without it a slow rank is only\n"
        "named",
        slow_option, give_up_slow, NULL),
    NUM("rejoin-ms", 'j', "T",
        "--launcher ssh --max-workers: try a host with a slot free\n"
        "again every T ms (default 5000); --hostfile is re-read\n"
        "then, so a host added to it takes a place too",
        rejoin_ms, 1, INT_MAX, "milliseconds (1 or more)"),
    NUM("heartbeat-timeout-ms", 'b', "T",
        "a worker that sent heartbeats and then falls silent\n"
        "for T ms is killed and restarted (default 10000; 0: off)",
        heartbeat_ms, 0, MS, "milliseconds"),
    NUM("progress-timeout-ms", 'P', "T",
        "a rank the others have waited for T ms in a collective\n"
        "it has not called (its heartbeats say it stands still in\n"
        "its own code), or that has not come back to a recovery\n"
        "round for T ms, is named and handled by --on-stuck\n"
        "(default 600000, 10 minutes; 0: off)",
        progress_ms, 0, MS, "milliseconds"),
    ARG("on-stuck", 'S', "restart|fail",
        "such a rank is killed (SIGKILL to its process group) and\n"
        "restarted like a dead one (restart, the default), or the\n"
        "job fails with the sentence naming it (fail)",
        pick, stuck_fail, NULL),
    NUM("output-buffer-bytes", 'U', "B",
        "output waiting for a slow reader of stdout or stderr is\n"
        "held up to B bytes per stream (default 4 MiB); beyond,\n"
        "worker lines are dropped and counted, never waited for",
        out_bytes, 4096, MS, "bytes (4096 or more)"),
    ARG("output-dir", 'I', "DIR",
        "also write each rank's stdout (with its tracker_print\n"
        "lines) and stderr, unprefixed, to\n"
        "DIR/rank.R/incarnation.K/{stdout,stderr} (K: 0 for its\n"
        "first process, then one more per restart), as mpirun's\n"
        "--output-filename and torchrun's --log-dir do",
        text, output_dir, "a directory"),
    ARG("status", 'w', "[ADDR:]PORT",
        "serve the job's status page, /status.json and /metrics\n"
        "on PORT (0: any; loopback unless ADDR is given, then a\n"
        "read-only token is required, printed at start;\n"
        "docs/status.md).  `rally-run status URL` prints its ranks",
        text, status_opt, NULL),
    ARG("events", 'e', "FILE",
        "write every event of the job as JSON Lines to FILE\n"
        "(docs/events.md)",
        text, events_path, NULL),
    SWITCH("progress", 'i',
           "one updating progress line on a terminal (plain lines on\n"
           "a pipe): iteration i of n, rate, ETA, the application's\n"
           "last reported value",
           progress),
    TEXT("Durable snapshots (docs/snapshot-format.md):\n"),
    ARG("snapshot-dir", 'D', "DIR", "write snapshots of committed checkpoints to DIR/JOB/", text,
        snap.dir, NULL),
    ARG("snapshot-copy", 'C', "DIR|s3://BUCKET/PREFIX",
        "copy each committed snapshot there too,\n"
        "in the background (verified there; retention there too);\n"
        "--resume latest takes the newest of both tiers",
        text, snap.copy, NULL),
    SWITCH("snapshot-local", 'V',
           "DIR is each host's own disk (not shared): each rank copies\n"
           "its own files to --snapshot-copy, the snapshot is\n"
           "committed there only, and each host keeps only its\n"
           "files of the newest one copied",
           snap.local),
    ARG("job", 'J', "NAME", "JOB (default: the program's file name)", text, snap.job_opt, NULL),
    NUM("snapshot-every", 'E', "K", "a snapshot every K checkpoint versions", snap.every, 0, MS,
        "a number of versions"),
    NUM("snapshot-every-ms", 'T', "T",
        "a snapshot when T ms passed since the last (rank 0's clock)", snap.every_ms, 0, MS,
        "milliseconds"),
    NUM("snapshot-keep", 'K', "K", "keep this run's newest K snapshots (default 2)", snap.keep, 1,
        MS, "a count (1 or more)"),
    SWITCH("snapshot-required", 'Q', "a failed snapshot fails the job (default: logged)",
           snap.required),
    SWITCH("snapshot-final", 'F', "snapshot the last version at the end, and keep it", snap.final),
    ARG("snapshot-busy", 'B', "wait|skip",
        "a snapshot asked for while one is still being written:\n"
        "the next checkpoint waits for the write (default), or\n"
        "it is skipped (logged) and the write goes on",
        pick_text, snap.busy, NULL),
    SWITCH("keep-snapshots", 'k', "keep this run's snapshots after it succeeded", snap.keep_all),
    ARG("resume", 'R', "latest|PATH",
        "start from the newest complete snapshot of the newest run\n"
        "in DIR/JOB, or from the snapshot directory PATH\n"
        "(verified before any worker starts); latest-if-any: the\n"
        "same, or a fresh start where no tier holds a complete one\n"
        "(a batch script run again by a requeue)",
        text, snap.resume, NULL),
    SWITCH("overwrite", 'O', "start afresh although DIR/JOB holds snapshots (they stay)",
           snap.overwrite),
    SWITCH("force", 'f',
           "resume although the application, its configuration or\n"
           "rally's version differ",
           snap.force),
    SWITCH("auto-resume", 'A',
           "when the job fails for good (restarts spent, every worker\n"
           "lost) or loses what only a snapshot holds (a result, local\n"
           "models or records every holder of which died), restart the\n"
           "whole job from this run's newest complete snapshot",
           auto_resume),
    NUM("max-job-restarts", 'X', "K", "at most K such restarts (default 3)", max_job_restarts, 0,
        INT_MAX, "a count (0 or more)"),
    TEXT("SIGUSR1 to rally-run asks for a snapshot now (with --snapshot-dir).  SIGTERM (a\n"
         "preemption; Slurm's --signal) with --snapshot-dir asks for one at the next\n"
         "checkpoint, waits up to --grace-ms for its commit, then stops the job (exit 5).\n"
         "RALLY_SNAPSHOT_DIR, _COPY, _JOB, _EVERY, _EVERY_MS, _KEEP, _REQUIRED, _FINAL, _BUSY "
         "and\n"
         "RALLY_RESUME, RALLY_RESUME_FORCE in rally-run's environment are these flags where\n"
         "they are not given (docs/config.md); a malformed value is a usage error.\n"
         "Workers on other hosts (docs/launch.md):\n"),
    DO("launcher", 'L', "L",
       "local (default: every worker here), ssh, slurm or mpirun:\n"
       "each rank is one local ssh / srun / mpirun -np 1 that runs\n"
       "rally-agent on the rank's host, which runs prog; a rank is\n"
       "restarted on the host it ran on",
       launcher),
    ARG("hosts", 'W', "h1:4,h2:4",
        "the hosts and their slots (none: 1); ranks fill them in\n"
        "order (slurm: default the allocation's nodes; mpirun:\n"
        "default localhost); h1:4@rack1 names h1's rack (or\n"
        "zone), which its workers get as RALLY_DOMAIN",
        text, hosts_opt, NULL),
    ARG("hostfile", 'Y', "F",
        "one host a line: host, host:K or host slots=K, with\n"
        "@LABEL after the host (or K) for its rack; # comments",
        text, hostfile, NULL),
    ARG("require-redundancy", 'Z', "host|rack",
        "refuse to start (exit 2) when losing one host (or\n"
        "rack) would lose every copy of a local model or of a\n"
        "result's piece; without it rally-run says so and goes\n"
        "on (docs/launch.md, \"Failure domains\")",
        pick, require_redundancy, NULL),
    DO("ssh-option", 'o', "OPT", "passed to ssh as -o OPT (repeatable), e.g. Port=2222",
       ssh_option),
    ARG("agent", 'G', "PATH",
        "rally-agent's path on the hosts (default: the one beside\n"
        "rally-run; prog and rally-agent must exist on every host)",
        text, agent_opt, NULL),
    {NULL, 'x', 1, "VAR", "-x VAR | VAR=VALUE",
     "every worker gets VAR with rally-run's value, or VALUE\n"
     "(repeatable; mpirun's spelling).  Remote workers get\n"
     "rally-run's RALLY_* variables and nothing else without\n"
     "it: a Python job wants -x PYTHONPATH.  Local workers\n"
     "inherit rally-run's environment; VALUE overrides it",
     export_option, 0, 0, 0, NULL, 0},
    SWITCH("dry-run", 'd',
           "print each rank's local command line (\"rank R: ...\") and\n"
           "exit; nothing is started",
           dry_run),
    TEXT("      With these the tracker binds every address and the workers are told this host's\n"
         "      primary address (the first IPv4 one of an interface that is up and not "
         "loopback),\n"
         "      unless --bind names the one they reach.  The secret reaches the agent on its\n"
         "      stdin, never in argv or the environment (docs/security.md).\n"),
    {"help", 'h', 1, NULL, NULL, "this text", help, 0, 0, 0, NULL, 0},
    {NULL, 0, 0, NULL, "--version", "rally-run's version (as the first argument)", NULL, 0, 0, 0,
     NULL, 0},
};
#define NFLAGS (sizeof FLAGS / sizeof FLAGS[0])

/* The usage's column where a flag's help starts. */
#define HELP_COL 29

static void usage(FILE *f)
{
    fputs("usage: rally-run -n N [options] [--] prog [args...]\n"
          "Runs N workers of a rally job on this host, with a tracker inside.\n"
          "\n",
          f);
    for (size_t i = 0; i < NFLAGS; i++) {
        const struct flag *g = &FLAGS[i];
        if (g->name == NULL && g->shown == NULL) {
            fputs(g->help, f);
            continue;
        }
        char left[64], dash[8] = "";
        if (g->dash)
            snprintf(dash, sizeof dash, "-%c, ", g->letter);
        if (g->shown != NULL)
            snprintf(left, sizeof left, "%s", g->shown);
        else
            snprintf(left, sizeof left, "%s--%s%s%s", dash, g->name, g->arg ? " " : "",
                     g->arg ? g->arg : "");
        /* "-L ..." sits at column 2, "--NAME ..." at 6 */
        int n = fprintf(f, "%s%s", left[1] == '-' ? "      " : "  ", left);
        fprintf(f, "%*s", n < HELP_COL ? HELP_COL - n : 2, "");
        for (const char *p = g->help, *nl;; p = nl + 1) {
            char line[128];
            nl = strchr(p, '\n');
            size_t w = nl ? (size_t)(nl - p) : strlen(p);
            snprintf(line, sizeof line, "%.*s", (int)w, p);
            fprintf(f, line, (long long)g->max); /* help may name max as %lld */
            fputc('\n', f);
            if (nl == NULL)
                break;
            fprintf(f, "%*s", HELP_COL, "");
        }
    }
    fputs("\n"
          "Workers get RALLY_TRACKER, RALLY_SECRET_FILE and RALLY_TASK_ID, and torchrun's\n"
          "RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE; their output\n"
          "lines (from every host) are prefixed with \"[rank] \".  A worker killed by a\n"
          "signal after the job started (and before any rank finalized) is a crash: it is\n"
          "started again with the same rank and environment (on the same host; so is one\n"
          "whose host connection was lost; one whose host then cannot be reached, on a\n"
          "host with a slot free); the others wait and recover.  A worker that\n"
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
          "         tracker's own verdict, \"host H (rank R): cannot be reached: ...\" with\n"
          "         no slot free elsewhere)\n"
          "  2      a usage error;  127: prog cannot be run (on a host: \"host H (rank R): prog:\n"
          "         not found\");  128+S: rally-run got signal S\n"
          "         (SIGINT, SIGTERM, SIGHUP: passed to the workers, who get --grace-ms)\n"
          "The last line on stderr is a summary:\n"
          "  rally-run: summary: deaths=D recovered=R epochs=E restarts=S "
          "per-rank-deaths=0:0,1:2,...\n"
          "  (recovered: deaths after which the job got back in step; epochs: recoveries,\n"
          "  one per re-wiring, which can serve several deaths at once); after --auto-resume\n"
          "  restarted the job K times, one line counts every attempt and ends job-restarts=K\n",
          f);
}

/* The row that takes letter c. */
static const struct flag *flag_of(int c)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (FLAGS[i].set != NULL && FLAGS[i].letter == c)
            return &FLAGS[i];
    return NULL;
}

/* The snapshot settings of rally-run's environment (run_snap_env), after the
 * command line: each is taken as its flag when that was not given (an
 * empty value is no value).  -1 to go on, or the exit status. */
static int env_options(struct run *r)
{
    for (size_t i = 0; i < run_nsnap_env; i++) {
        const char *val = getenv(run_snap_env[i].var);
        if (val == NULL || !*val)
            continue;
        if (run_snap_env[i].opt == 0)
            return cli_usage_error("rally-run",
                                   "%s=%s is in the environment, but rally-run makes a fresh "
                                   "one for every run (its snapshots, lock and clean-up go by "
                                   "it): unset it",
                                   run_snap_env[i].var, val);
        if (r->given[run_snap_env[i].opt])
            continue; /* the flag wins, as an argument wins over the environment */
        const struct flag *f = flag_of(run_snap_env[i].opt);
        int st = f->set(r, f, val, run_snap_env[i].var);
        if (st >= 0)
            return st;
        if (!r->env_snap[0] && run_snap_env[i].opt != 'D')
            snprintf(r->env_snap, sizeof r->env_snap, "%s=%.100s", run_snap_env[i].var, val);
    }
    return -1;
}

/* -x VAR or -x VAR=VALUE (mpirun's spelling): every worker gets VAR, with
 * rally-run's value or VALUE, under every launcher.  -1 or the exit status. */
static int export_option(struct run *r, const struct flag *f, const char *arg, const char *as)
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
    long own = run_owned(arg, n);
    if (own >= 0)
        return cli_usage_error(
            "rally-run", "-x %.*s: rally-run sets %.*s for every worker itself%s%s", (int)n, arg,
            (int)n, arg, own < (long)run_nsnap_env && run_snap_env[own].flag ? "; give " : "",
            own < (long)run_nsnap_env && run_snap_env[own].flag ? run_snap_env[own].flag : "");
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
int run_parse(int argc, char **argv, struct run *r)
{
    struct option longs[NFLAGS + 1];
    char shorts[2 * NFLAGS + 2] = "+";
    size_t nl = 0, ns = 1;
    for (size_t i = 0; i < NFLAGS; i++) {
        const struct flag *f = &FLAGS[i];
        if (f->set == NULL)
            continue;
        int has = f->arg != NULL ? required_argument : no_argument;
        if (f->name != NULL)
            longs[nl++] = (struct option){f->name, has, NULL, f->letter};
        if (f->dash) {
            shorts[ns++] = (char)f->letter;
            if (has == required_argument)
                shorts[ns++] = ':';
        }
    }
    longs[nl] = (struct option){NULL, 0, NULL, 0};
    shorts[ns] = '\0';
    r->host = NULL; /* resolve_bind: by the launcher */
    r->kind = &rally__launch_kind_local;
    r->startup_ms = 60000;
    r->grace_ms = 3000;
    r->max_restarts = 3;
    r->heartbeat_ms = 10000;
    r->progress_ms = 600000;
    r->snap.keep = 2;
    r->max_job_restarts = 3;
    r->snap.busy = "wait";
    r->rejoin_ms = 5000;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        r->given[c & 127] = 1;
        const struct flag *f = flag_of(c); /* NULL also for getopt's '?' */
        if (f == NULL)
            return cli_usage_error("rally-run", "unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        /* -np N, mpirun's spelling: getopt read "-np" as -n with the value "p" */
        if (c == 'n' && strcmp(argv[optind - 1], "-np") == 0 && optind < argc)
            optarg = argv[optind++];
        char as[48]; /* the flag as its errors name it */
        if (f->dash)
            snprintf(as, sizeof as, "-%c", f->letter);
        else
            snprintf(as, sizeof as, "--%s", f->name);
        int st = f->set(r, f, f->arg != NULL ? optarg : NULL, as);
        if (st >= 0)
            return st;
    }
    int st = env_options(r);
    if (st >= 0)
        return st;
    if (r->world == 0)
        return cli_usage_error("rally-run", "-n N (the number of workers) is required");
    if (optind >= argc)
        return cli_usage_error("rally-run", "no program to run");
    r->argv = argv + optind;
    return run_check(r);
}
