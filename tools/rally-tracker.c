/*
 * rally-tracker — a standalone tracker for workers that another launcher
 * (a batch scheduler, ssh, a script) starts.
 *
 *     rally-tracker -n N [--bind ADDR|IFACE] [--port P] [--secret-file F]
 *                   [--startup-timeout-ms T] [--heartbeat-timeout-ms T]
 *                   [--progress-timeout-ms T] [--no-recovery]
 *                   [--min-workers M] [--control-stdin]
 *
 * It loads the secret file F when it exists and creates it (0600) when it
 * does not; without --secret-file it creates one in a fresh 0700 directory
 * and removes both at exit.  Then it prints, flushed, two lines a script can
 * eval before starting the workers:
 *
 *     RALLY_TRACKER=host:port        ([v6]:port for an IPv6 address)
 *     RALLY_SECRET_FILE=/path
 *
 * The address is --bind's (an interface name stands for its first address);
 * bound to every address, it is this host's name when that resolves to an
 * address other hosts can use (not loopback), else the first address of the
 * first interface that is up (net/sock.h, rally__sock_primary_addr).
 * and serves the job in the poll loop rally-run uses too (launch/serve.c,
 * around the same tracker, src/tracker/server.h) until every rank finalized
 * (exit 0) or the job failed (exit 1, one line with the sentence).  Workers'
 * PRINT lines go to stdout prefixed "[rank] ".  SIGINT/SIGTERM abort the job
 * (workers hear ABORT) and exit 128+signal.
 *
 * Restarts belong to the launcher that started the workers: when a worker
 * fails after the job started, the tracker fences it, logs "rank R failed:
 * ..." and waits (up to the startup timeout per epoch) for the survivors to
 * rejoin and for a worker with the same RALLY_TASK_ID to register again, as
 * often as that happens; each recovery is logged.  --no-recovery makes any
 * worker failure fatal instead.  The secret file must reach the workers by
 * other means (a shared file system, scp); it never travels on the command
 * line.
 *
 * A launcher that knows a worker will not come back (its machine is gone)
 * says so with --control-stdin, a line "gone TASK_ID [CAUSE]" on our stdin:
 * with --min-workers M the job goes on without it, renumbered, while M are
 * left (docs/recovery.md, "Elastic jobs"); else the job fails at once rather
 * than wait out the startup timeout for it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "launch/proc.h"
#include "launch/serve.h"
#include "net/auth.h"
#include "net/sock.h"
#include "tracker/proto.h"
#include "tracker/server.h"
#include "util/clock.h"

#define LINGER_MS 2000 /* after the end, time for the last BYE/ABORT to leave */
#define CMD_MAX 512     /* a command line on stdin; a longer one is refused whole */

struct job {
    int world, port, recovery, min_workers;
    const char *host, *secret_file;
    char bind[RALLY__HOST_MAX]; /* host with an interface name made its address */
    int64_t startup_ms, heartbeat_ms, progress_ms;
    struct rally__tracker *t;
    int sfd;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    int made_file;  /* we created path (and remove it at exit) */
    int stop_sig;   /* the SIGINT/SIGTERM we got, 0 */
    int64_t end_by; /* the job ended: leave by then (RALLY__NEVER: it runs) */
    int control;    /* --control-stdin, until its end of file */
    char cmd[CMD_MAX];
    size_t ncmd;   /* bytes of the line being read in cmd */
    int cmd_long;  /* the line being read outgrew cmd: dropped at its end */
};

/* --- the tracker's hooks ---------------------------------------------------- */

static void on_print(void *arg, int rank, const char *msg)
{
    rally__launch_put_lines(stdout, rank, msg, strlen(msg), 1);
    fflush(stdout);
}

static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    if (ev->kind == RALLY__TEV_LOG || ev->kind == RALLY__TEV_PROGRESS)
        fprintf(stderr, "rally-tracker: %s\n", ev->text);
    else if (ev->kind == RALLY__TEV_RANK_FAILED)
        fprintf(stderr,
                "rally-tracker: rank %d failed: %s; waiting for it to register again "
                "(RALLY_TASK_ID=%s) and for the others to rejoin (epoch %u)\n",
                ev->rank, ev->text, ev->task_id, ev->epoch);
    else if (ev->kind == RALLY__TEV_RECOVERED)
        fprintf(stderr, "rally-tracker: recovered: %s\n", ev->text);
    else if (ev->kind == RALLY__TEV_RESIZED)
        fprintf(stderr, "rally-tracker: %s\n", ev->text);
}

/* --- commands on stdin (--control-stdin) ------------------------------------- */

/* One line without its newline: "gone TASK_ID [CAUSE]". */
static void command(struct job *j, char *line)
{
    char *task = line + strspn(line, " ");
    if (strncmp(task, "gone ", 5) != 0) {
        fprintf(stderr, "rally-tracker: unknown command '%s' on stdin (known: gone TASK_ID [CAUSE])\n",
                line);
        return;
    }
    task += 5 + strspn(task + 5, " ");
    char *cause = task + strcspn(task, " ");
    if (*cause)
        *cause++ = '\0';
    int rank = rally__tracker_rank_of(j->t, task);
    if (rank < 0) {
        fprintf(stderr, "rally-tracker: gone %s: no rank has that task id (now)\n", task);
        return;
    }
    rally__tracker_rank_gone(j->t, rank, *cause ? cause : "given up by its launcher");
}

static size_t fill(void *arg, struct pollfd *p)
{
    struct job *j = arg;
    if (!j->control)
        return 0;
    p->fd = STDIN_FILENO;
    p->events = POLLIN;
    return 1;
}

/* Reads what stdin has into cmd and runs each whole line; end of file or an
 * error ends the commands, not the job. */
static void handle(void *arg, const struct pollfd *p, size_t n)
{
    struct job *j = arg;
    if (n < 1 || !(p->revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
        return;
    ssize_t got = read(STDIN_FILENO, j->cmd + j->ncmd, sizeof j->cmd - 1 - j->ncmd);
    if (got <= 0) {
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        j->control = 0;
        return;
    }
    j->ncmd += (size_t)got;
    char *line = j->cmd, *nl;
    while ((nl = memchr(line, '\n', j->ncmd - (size_t)(line - j->cmd))) != NULL) {
        *nl = '\0';
        if (!j->cmd_long)
            command(j, line);
        j->cmd_long = 0;
        line = nl + 1;
    }
    j->ncmd -= (size_t)(line - j->cmd);
    memmove(j->cmd, line, j->ncmd);
    if (j->ncmd == sizeof j->cmd - 1) { /* no newline in CMD_MAX bytes */
        if (!j->cmd_long)
            fprintf(stderr, "rally-tracker: a command on stdin longer than %d bytes, ignored\n",
                    CMD_MAX - 2);
        j->cmd_long = 1;
        j->ncmd = 0;
    }
}

/* --- the serve loop's owner hooks ------------------------------------------- */

/* Done once the job ended and its last frames left (or LINGER_MS passed). */
static int done(void *arg)
{
    struct job *j = arg;
    if (rally__tracker_state(j->t, NULL, NULL) != RALLY__TRACKER_RUNNING &&
        j->end_by == RALLY__NEVER)
        j->end_by = rally__now_ms() + LINGER_MS;
    return j->end_by != RALLY__NEVER &&
           (rally__tracker_flushed(j->t) || rally__now_ms() >= j->end_by);
}

static int64_t deadline(void *arg)
{
    struct job *j = arg;
    return j->end_by;
}

static void on_signal(void *arg, int sig)
{
    struct job *j = arg;
    if (j->stop_sig)
        return;
    j->stop_sig = sig;
    rally__tracker_abort(j->t, RALLY_EPEER, "the tracker was stopped by signal %d", sig);
}

/* --- main: parse options, set up, serve, verdict ----------------------------- */

/* Returns -1 to go on, or the exit status. */
static int parse(int argc, char **argv, struct job *j)
{
    static const struct option longs[] = {{"workers", required_argument, NULL, 'n'},
                                          {"host", required_argument, NULL, 'H'},
                                          {"bind", required_argument, NULL, 'H'},
                                          {"port", required_argument, NULL, 'p'},
                                          {"secret-file", required_argument, NULL, 'f'},
                                          {"startup-timeout-ms", required_argument, NULL, 's'},
                                          {"heartbeat-timeout-ms", required_argument, NULL, 'b'},
                                          {"progress-timeout-ms", required_argument, NULL, 'P'},
                                          {"no-recovery", no_argument, NULL, 'R'},
                                          {"min-workers", required_argument, NULL, 'm'},
                                          {"control-stdin", no_argument, NULL, 'c'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    j->startup_ms = 300000;
    j->heartbeat_ms = 10000;
    j->progress_ms = 600000;
    j->recovery = 1;
    j->host = "";
    int c;
    int64_t v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "n:h", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (rally__parse_int(optarg, 1, RALLY__WORLD_MAX, &v))
                return cli_usage_error("rally-tracker",
                                       "-n wants a number of workers from 1 to %d, not '%s'",
                                       RALLY__WORLD_MAX, optarg);
            j->world = (int)v;
            break;
        case 'H':
            j->host = optarg;
            break;
        case 'p':
            if (rally__parse_int(optarg, 0, 65535, &v))
                return cli_usage_error("rally-tracker", "--port wants 0..65535, not '%s'", optarg);
            j->port = (int)v;
            break;
        case 'f':
            j->secret_file = optarg;
            break;
        case 's':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error("rally-tracker",
                                       "--startup-timeout-ms wants milliseconds, not '%s'", optarg);
            j->startup_ms = v;
            break;
        case 'b':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error(
                    "rally-tracker", "--heartbeat-timeout-ms wants milliseconds, not '%s'", optarg);
            j->heartbeat_ms = v;
            break;
        case 'P':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error(
                    "rally-tracker", "--progress-timeout-ms wants milliseconds, not '%s'", optarg);
            j->progress_ms = v;
            break;
        case 'R':
            j->recovery = 0;
            break;
        case 'm':
            if (rally__parse_int(optarg, 1, RALLY__WORLD_MAX, &v))
                return cli_usage_error("rally-tracker",
                                       "--min-workers wants a number of workers, not '%s'", optarg);
            j->min_workers = (int)v;
            break;
        case 'c':
            j->control = 1;
            break;
        case 'h':
            printf(
                "usage: rally-tracker -n N [options]\n"
                "Serves one rally job whose workers another launcher starts.\n"
                "\n"
                "  -n, --workers N            number of workers (1..%d)\n"
                "      --bind ADDR|IFACE      listen on this address, or on this interface's\n"
                "                             first address, and print it (default: every\n"
                "                             address; the printed one is this host's name or\n"
                "                             its first interface's address); [v6] or bare v6\n"
                "      --host H               the same as --bind\n"
                "      --port P               port (default 0: any free port)\n"
                "      --secret-file F        the job's secret: loaded if F exists, else\n"
                "                             created 0600 (default: a temporary one)\n"
                "      --startup-timeout-ms T every worker must join within T ms\n"
                "                             (default 300000; 0: wait forever); the same\n"
                "                             bound applies to each recovery\n"
                "      --heartbeat-timeout-ms T  a worker that sent heartbeats and then falls\n"
                "                             silent for T ms has failed (default 10000; 0: off)\n"
                "      --progress-timeout-ms T  a rank the others have waited for T ms in a\n"
                "                             collective it has not called, or that has not\n"
                "                             come back to a recovery round for T ms, fails\n"
                "                             the job with a sentence naming it (this tracker\n"
                "                             cannot kill it; default 600000; 0: off)\n"
                "      --no-recovery          any worker failure fails the job\n"
                "      --min-workers M        an elastic job: a worker given up (gone, below)\n"
                "                             is dropped and the others go on, renumbered,\n"
                "                             while M are left (below -n; the workers need\n"
                "                             rally_elastic=1)\n"
                "      --control-stdin        read commands from stdin, one a line:\n"
                "                             'gone TASK_ID [CAUSE]': that worker will not\n"
                "                             come back (with --min-workers the job goes on\n"
                "                             without it, else it fails now)\n"
                "  -h, --help                 this text\n"
                "\n"
                "Prints RALLY_TRACKER=host:port and RALLY_SECRET_FILE=path (eval them and\n"
                "give each worker RALLY_TASK_ID=0..N-1), then exits 0 when every worker\n"
                "finalized, 1 when the job failed, 128+S after signal S.  When a worker dies\n"
                "after the job started, start it again with the same RALLY_TASK_ID: the\n"
                "others wait for it and the job recovers (restarts are your launcher's\n"
                "business; the tracker does not limit them).\n",
                RALLY__WORLD_MAX);
            return 0;
        default:
            return cli_usage_error("rally-tracker", "unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (j->world == 0)
        return cli_usage_error("rally-tracker", "-n N (the number of workers) is required");
    if (optind < argc)
        return cli_usage_error("rally-tracker", "unexpected argument '%s'", argv[optind]);
    if (j->min_workers >= j->world)
        return cli_usage_error("rally-tracker", "--min-workers %d must be below -n %d",
                               j->min_workers, j->world);
    if (j->min_workers && !j->recovery)
        return cli_usage_error("rally-tracker", "--min-workers needs recovery (not --no-recovery)");
    struct rally__err e = {0, ""};
    if (rally__sock_bind_addr(j->host, j->bind, sizeof j->bind, &e) != RALLY_OK)
        return cli_usage_error("rally-tracker", "--bind %s: %s", j->host, e.msg);
    return -1;
}

/* This host's name, when it resolves to an address that is not loopback
 * (Debian maps it to 127.0.1.1 unless DNS or /etc/hosts say otherwise, and
 * a worker that reaches the tracker over loopback advertises loopback). */
static int name_reachable(char *me, size_t cap)
{
    if (gethostname(me, cap - 1) != 0 || !*me)
        return 0;
    me[cap - 1] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    if (getaddrinfo(me, NULL, &hints, &res) != 0)
        return 0;
    int ok = 1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        char h[RALLY__HOST_MAX];
        rally__addr_str(ai->ai_addr, h, sizeof h, NULL);
        ok &= !rally__host_is_loopback(h);
    }
    freeaddrinfo(res);
    return ok;
}

/* Signals, the secret, the tracker, the two lines.  Returns 0 or 1. */
static int setup(struct job *j)
{
    if ((j->sfd = rally__launch_signals(0)) < 0) {
        fprintf(stderr, "rally-tracker: cannot set up signal handling: %s\n", strerror(errno));
        return 1;
    }
    struct rally__err e = {0, ""};
    struct rally__secret s;
    if (j->secret_file == NULL) {
        int err = rally__launch_tmpdir("rally-tracker", j->dir, sizeof j->dir);
        if (err != 0) {
            fprintf(stderr, "rally-tracker: cannot create %s: %s\n", j->dir, strerror(err));
            j->dir[0] = '\0';
            return 1;
        }
        snprintf(j->path, sizeof j->path, "%s/secret", j->dir);
    } else {
        snprintf(j->path, sizeof j->path, "%s", j->secret_file);
    }
    if (access(j->path, F_OK) == 0) {
        if (rally__secret_load(j->path, &s, &e) != RALLY_OK)
            goto fail;
    } else if (rally__secret_create(j->path, &s, &e) != RALLY_OK) {
        goto fail;
    } else {
        j->made_file = j->secret_file == NULL;
    }
    struct rally__tracker_opts o = {.world = j->world,
                                    .host = j->bind,
                                    .port = j->port,
                                    .secret = &s,
                                    .startup_timeout_ms = j->startup_ms,
                                    .print = on_print,
                                    .event = on_event};
    int rc = rally__launch_tracker_new(&j->t, &o, j->recovery, j->heartbeat_ms, &e);
    memset(&s, 0, sizeof s);
    if (rc != RALLY_OK)
        goto fail;
    rally__tracker_set_progress_timeout(j->t, j->progress_ms, 1); /* it cannot kill a worker */
    if (j->min_workers)
        rally__tracker_set_min_world(j->t, j->min_workers);
    char me[RALLY__HOST_MAX] = "", hp[RALLY__HOST_MAX + 8];
    if (!rally__launch_host_is_any(j->bind))
        snprintf(me, sizeof me, "%s", j->bind);
    else if (!name_reachable(me, sizeof me))
        rally__sock_primary_addr(me, sizeof me);
    char abspath[PATH_MAX];
    rally__hostport_fmt(me, rally__tracker_port(j->t), hp, sizeof hp);
    printf("RALLY_TRACKER=%s\n", hp);
    printf("RALLY_SECRET_FILE=%s\n", realpath(j->path, abspath) ? abspath : j->path);
    fflush(stdout);
    return 0;
fail:
    fprintf(stderr, "rally-tracker: %s\n", e.msg);
    return 1;
}

static int verdict(const struct job *j)
{
    const char *sentence;
    if (j->stop_sig) {
        fprintf(stderr, "rally-tracker: stopped by signal %d (%s)\n", j->stop_sig,
                strsignal(j->stop_sig));
        return 128 + j->stop_sig;
    }
    if (rally__tracker_state(j->t, &sentence, NULL) == RALLY__TRACKER_FAILED) {
        fprintf(stderr, "rally-tracker: job aborted: %s\n", sentence);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct job j;
    if (cli_version("rally-tracker", argc, argv))
        return 0;
    memset(&j, 0, sizeof j);
    j.sfd = -1;
    j.end_by = RALLY__NEVER;
    int status = parse(argc, argv, &j);
    if (status >= 0)
        return status;
    status = setup(&j);
    if (status != 0)
        goto cleanup;
    struct rally__launch_owner owner = {
        .arg = &j, .nfds = 1, .done = done, .fill = fill, .deadline = deadline,
        .signal = on_signal, .handle = handle};
    int rc = rally__launch_serve(j.t, j.sfd, &owner);
    if (rc == RALLY_ENOMEM)
        fprintf(stderr, "rally-tracker: out of memory\n");
    else if (rc != RALLY_OK)
        fprintf(stderr, "rally-tracker: poll failed: %s\n", strerror(errno));
    status = rc == RALLY_OK ? verdict(&j) : 1;
cleanup:
    rally__tracker_free(j.t);
    if (j.made_file)
        unlink(j.path);
    if (j.dir[0])
        rmdir(j.dir);
    if (j.sfd >= 0)
        close(j.sfd);
    return status;
}
