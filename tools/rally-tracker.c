/*
 * rally-tracker — a standalone tracker for workers that another launcher
 * (a batch scheduler, ssh, a script) starts.
 *
 *     rally-tracker -n N [--host H] [--port P] [--secret-file F]
 *                   [--startup-timeout-ms T] [--heartbeat-timeout-ms T] [--no-recovery]
 *
 * It loads the secret file F when it exists and creates it (0600) when it
 * does not; without --secret-file it creates one in a fresh 0700 directory
 * and removes both at exit.  Then it prints, flushed, two lines a script can
 * eval before starting the workers:
 *
 *     RALLY_TRACKER=host:port
 *     RALLY_SECRET_FILE=/path
 *
 * and serves the job in a poll loop (the same tracker rally-run embeds,
 * src/tracker/server.h) until every rank finalized (exit 0) or the job failed
 * (exit 1, one line with the sentence).  Workers' PRINT lines go to stdout
 * prefixed "[rank] ".  SIGINT/SIGTERM abort the job (workers hear ABORT) and
 * exit 128+signal.
 *
 * Restarts belong to the launcher that started the workers: when a worker
 * fails after the job started, the tracker fences it, logs "rank R failed:
 * ..." and waits (up to the startup timeout per epoch) for the survivors to
 * rejoin and for a worker with the same RALLY_TASK_ID to register again, as
 * often as that happens; each recovery is logged.  --no-recovery makes any
 * worker failure fatal instead.  The secret file must reach the workers by other means
 * (a shared file system, scp); it never travels on the command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "net/auth.h"
#include "net/sock.h"
#include "tracker/proto.h"
#include "cli.h"
#include "tracker/server.h"
#include "util/clock.h"

#define LINGER_MS 2000 /* after the end, time for the last BYE/ABORT to leave */

static void on_print(void *arg, int rank, const char *msg)
{
    const char *s = msg;
    for (;;) {
        const char *nl = strchr(s, '\n');
        int k = nl ? (int)(nl - s) : (int)strlen(s);
        if (k > 0 || nl)
            printf("[%d] %.*s\n", rank, k, s);
        if (!nl)
            break;
        s = nl + 1;
    }
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
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {{"workers", required_argument, NULL, 'n'},
                                          {"host", required_argument, NULL, 'H'},
                                          {"port", required_argument, NULL, 'p'},
                                          {"secret-file", required_argument, NULL, 'f'},
                                          {"startup-timeout-ms", required_argument, NULL, 's'},
                                          {"heartbeat-timeout-ms", required_argument, NULL, 'b'},
                                          {"no-recovery", no_argument, NULL, 'R'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    int world = 0, port = 0, c, status = 1, sfd = -1, made_file = 0, recovery = 1;
    int64_t heartbeat_ms = 10000;
    const char *host = "", *secret_file = NULL;
    int64_t startup_ms = 300000;
    int64_t v;
    char dir[PATH_MAX] = "", path[PATH_MAX + 16] = "";
    struct rally__tracker *t = NULL;
    struct pollfd *p = NULL;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "n:h", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (rally__parse_int(optarg, 1, RALLY__WORLD_MAX, &v))
                return cli_usage_error("rally-tracker", "-n wants a number of workers from 1 to %d, not '%s'",
                                   RALLY__WORLD_MAX, optarg);
            world = (int)v;
            break;
        case 'H':
            host = optarg;
            break;
        case 'p':
            if (rally__parse_int(optarg, 0, 65535, &v))
                return cli_usage_error("rally-tracker", "--port wants 0..65535, not '%s'", optarg);
            port = (int)v;
            break;
        case 'f':
            secret_file = optarg;
            break;
        case 's':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error("rally-tracker", "--startup-timeout-ms wants milliseconds, not '%s'", optarg);
            startup_ms = v;
            break;
        case 'b':
            if (rally__parse_int(optarg, 0, INT64_MAX / 4, &v))
                return cli_usage_error("rally-tracker", "--heartbeat-timeout-ms wants milliseconds, not '%s'", optarg);
            heartbeat_ms = v;
            break;
        case 'R':
            recovery = 0;
            break;
        case 'h':
            printf("usage: rally-tracker -n N [options]\n"
                   "Serves one rally job whose workers another launcher starts.\n"
                   "\n"
                   "  -n, --workers N            number of workers (1..%d)\n"
                   "      --host H               bind address (default: every address)\n"
                   "      --port P               port (default 0: any free port)\n"
                   "      --secret-file F        the job's secret: loaded if F exists, else\n"
                   "                             created 0600 (default: a temporary one)\n"
                   "      --startup-timeout-ms T every worker must join within T ms\n"
                   "                             (default 300000; 0: wait forever); the same\n"
                   "                             bound applies to each recovery\n"
                   "      --heartbeat-timeout-ms T  a worker that sent heartbeats and then falls\n"
                   "                             silent for T ms has failed (default 10000; 0: off)\n"
                   "      --no-recovery          any worker failure fails the job\n"
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
            return cli_usage_error("rally-tracker", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (world == 0)
        return cli_usage_error("rally-tracker", "-n N (the number of workers) is required");
    if (optind < argc)
        return cli_usage_error("rally-tracker", "unexpected argument '%s'", argv[optind]);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
        (sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        fprintf(stderr, "rally-tracker: cannot set up signal handling: %s\n", strerror(errno));
        goto cleanup;
    }
    struct rally__err e = {0, ""};
    struct rally__secret s;
    if (secret_file == NULL) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/rally-tracker-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL) {
            fprintf(stderr, "rally-tracker: cannot create %s: %s\n", dir, strerror(errno));
            dir[0] = '\0';
            goto cleanup;
        }
        snprintf(path, sizeof path, "%s/secret", dir);
    } else {
        snprintf(path, sizeof path, "%s", secret_file);
    }
    if (access(path, F_OK) == 0) {
        if (rally__secret_load(path, &s, &e) != RALLY_OK)
            goto fail;
    } else if (rally__secret_create(path, &s, &e) != RALLY_OK) {
        goto fail;
    } else {
        made_file = secret_file == NULL;
    }
    struct rally__tracker_opts o = {.world = world,
                                    .host = host,
                                    .port = port,
                                    .secret = &s,
                                    .startup_timeout_ms = startup_ms,
                                    .print = on_print,
                                    .event = on_event};
    int rc = rally__tracker_new(&t, &o, &e);
    memset(&s, 0, sizeof s);
    if (rc != RALLY_OK)
        goto fail;
    rally__tracker_set_recovery(t, recovery);
    rally__tracker_set_heartbeat_timeout(t, heartbeat_ms);
    char me[RALLY__HOST_MAX] = "";
    if (!*host || !strcmp(host, "*") || !strcmp(host, "0.0.0.0") || !strcmp(host, "::")) {
        if (gethostname(me, sizeof me - 1) != 0 || !*me)
            snprintf(me, sizeof me, "127.0.0.1");
    } else {
        snprintf(me, sizeof me, "%s", host);
    }
    char abspath[PATH_MAX];
    printf(strchr(me, ':') ? "RALLY_TRACKER=[%s]:%d\n" : "RALLY_TRACKER=%s:%d\n", me,
           rally__tracker_port(t));
    printf("RALLY_SECRET_FILE=%s\n", realpath(path, abspath) ? abspath : path);
    fflush(stdout);

    int stop_sig = 0;
    int64_t end_by = RALLY__NEVER;
    for (;;) {
        int st = rally__tracker_state(t, NULL, NULL);
        if (st != RALLY__TRACKER_RUNNING && end_by == RALLY__NEVER)
            end_by = rally__now_ms() + LINGER_MS;
        if (end_by != RALLY__NEVER && (rally__tracker_flushed(t) || rally__now_ms() >= end_by))
            break;
        size_t want = 1 + rally__tracker_npoll(t);
        struct pollfd *np = realloc(p, want * sizeof *p);
        if (np == NULL) {
            fprintf(stderr, "rally-tracker: out of memory\n");
            goto cleanup;
        }
        p = np;
        p[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        size_t n = rally__tracker_fill(t, p + 1, want - 1);
        int64_t d = rally__tracker_deadline(t);
        if (end_by < d)
            d = end_by;
        if (poll(p, n + 1, rally__ms_left(d)) < 0 && errno != EINTR) {
            fprintf(stderr, "rally-tracker: poll failed: %s\n", strerror(errno));
            goto cleanup;
        }
        struct signalfd_siginfo si;
        if (p[0].revents && read(sfd, &si, sizeof si) == (ssize_t)sizeof si && !stop_sig) {
            stop_sig = (int)si.ssi_signo;
            rally__tracker_abort(t, RALLY_EPEER, "the tracker was stopped by signal %d",
                                 stop_sig);
        }
        rally__tracker_handle(t, p + 1, n);
        fflush(stdout);
    }
    const char *sentence;
    if (stop_sig) {
        fprintf(stderr, "rally-tracker: stopped by signal %d (%s)\n", stop_sig,
                strsignal(stop_sig));
        status = 128 + stop_sig;
    } else if (rally__tracker_state(t, &sentence, NULL) == RALLY__TRACKER_FAILED) {
        fprintf(stderr, "rally-tracker: job aborted: %s\n", sentence);
        status = 1;
    } else {
        status = 0;
    }
    goto cleanup;
fail:
    fprintf(stderr, "rally-tracker: %s\n", e.msg);
cleanup:
    free(p);
    rally__tracker_free(t);
    if (made_file)
        unlink(path);
    if (dir[0])
        rmdir(dir);
    if (sfd >= 0)
        close(sfd);
    return status;
}
