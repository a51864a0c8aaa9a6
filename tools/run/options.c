/*
 * options.c — rally-run's usage text and command line (run/run.h): every
 * flag into struct run, the snapshot settings taken from the environment,
 * -x, and the checks between flags.
 */
#include <getopt.h>
#include <limits.h>
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
        "      --output-dir DIR       also write each rank's stdout (with its tracker_print\n"
        "                             lines) and stderr, unprefixed, to\n"
        "                             DIR/rank.R/incarnation.K/{stdout,stderr} (K: 0 for its\n"
        "                             first process, then one more per restart), as mpirun's\n"
        "                             --output-filename and torchrun's --log-dir do\n"
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
        int st = snap_option(r, run_snap_env[i].opt, val, run_snap_env[i].var);
        if (st >= 0)
            return st;
        if (!r->env_snap[0] && run_snap_env[i].opt != 'D')
            snprintf(r->env_snap, sizeof r->env_snap, "%s=%.100s", run_snap_env[i].var, val);
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

/* Which kinds an error lists (rally__launch_kind_list). */
static int grows(const struct rally__launch_kind *k)
{
    return k->grows;
}
static int refills(const struct rally__launch_kind *k)
{
    return k->refills;
}
static int wraps(const struct rally__launch_kind *k)
{
    return k->wrap != NULL;
}
static int ssh_options(const struct rally__launch_kind *k)
{
    return k->ssh_options;
}

/* Returns -1 to go on, or the exit status. */
int run_parse(int argc, char **argv, struct run *r)
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
                                          {"output-dir", required_argument, NULL, 'I'},
                                          {"launcher", required_argument, NULL, 'L'},
                                          {"hosts", required_argument, NULL, 'W'},
                                          {"hostfile", required_argument, NULL, 'Y'},
                                          {"ssh-option", required_argument, NULL, 'o'},
                                          {"agent", required_argument, NULL, 'G'},
                                          {"dry-run", no_argument, NULL, 'd'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    r->host = NULL; /* resolve_bind: by the launcher */
    r->kind = rally__launch_kinds[0];
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
                return cli_usage_error(
                    "rally-run", "--progress-timeout-ms wants milliseconds, not '%s'", optarg);
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
                return cli_usage_error("rally-run",
                                       "--rejoin-ms wants milliseconds (1 or more), "
                                       "not '%s'",
                                       optarg);
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
        case 'I':
            if (*optarg == '\0')
                return cli_usage_error("rally-run", "--output-dir wants a directory");
            r->output_dir = optarg;
            break;
        case 'X':
            if (rally__parse_int(optarg, 0, INT_MAX, &v))
                return cli_usage_error(
                    "rally-run", "--max-job-restarts wants a count (0 or more), not '%s'", optarg);
            r->max_job_restarts = (int)v;
            break;
        case 'L':
            if ((r->kind = rally__launch_kind_named(optarg)) == NULL) {
                char all[128];
                rally__launch_kind_list(all, sizeof all, NULL, "or");
                return cli_usage_error("rally-run", "--launcher wants %s, not '%s'", all, optarg);
            }
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
    char kinds[128];
    if (r->max_workers > r->world && !r->kind->grows) {
        rally__launch_kind_list(kinds, sizeof kinds, grows, "and");
        return cli_usage_error("rally-run", "--max-workers above -n is for --launcher %s", kinds);
    }
    if (r->given['j'] && !remote_grow(r)) {
        rally__launch_kind_list(kinds, sizeof kinds, refills, "or");
        return cli_usage_error("rally-run", "--rejoin-ms is for --launcher %s with --max-workers",
                               kinds);
    }
    /* room for the ranks taken in too, a few times over (each gets a slot of
     * its own; a joiner that could not be started gives its slot back) */
    r->slots =
        r->world + 4 * (r->max_workers - r->world) + (remote_grow(r) ? 2 * r->max_workers : 0);
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
    if (r->snap.dir == NULL && (r->snap.every || r->snap.every_ms || r->snap.required ||
                                r->snap.final || r->snap.keep_all || r->snap.overwrite ||
                                r->snap.job_opt || r->auto_resume || r->snap.copy || r->snap.local))
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
    if (!remote(r) && (r->hosts_opt || r->hostfile || r->agent_opt)) {
        rally__launch_kind_list(kinds, sizeof kinds, wraps, "or");
        return cli_usage_error("rally-run", "--hosts, --hostfile and --agent are for --launcher %s",
                               kinds);
    }
    if (r->nssh_opts > 0 && !r->kind->ssh_options) {
        rally__launch_kind_list(kinds, sizeof kinds, ssh_options, "or");
        return cli_usage_error("rally-run", "--ssh-option is for --launcher %s", kinds);
    }
    if (r->hosts_opt && r->hostfile)
        return cli_usage_error("rally-run", "give --hosts or --hostfile, not both");
    if (r->kind->needs_hosts && !r->hosts_opt && !r->hostfile)
        return cli_usage_error("rally-run", "--launcher %s needs --hosts or --hostfile",
                               r->kind->name);
    return -1;
}
