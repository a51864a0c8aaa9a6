/*
 * tworker.c — a worker that speaks the tracker protocol through the internal
 * client (src/tracker/client.h) instead of the public API, so the launcher
 * tests can finalize and recover without the collective layer.  It reads the
 * same environment rally_init does.  Like the library, it sends heartbeats
 * (every 100 ms) from its join on.  argv[1]:
 *
 *   ok        join, ready, PRINT "hello from rank R", SHUTDOWN, exit 0
 *   nofinal   join, ready, exit 0 without SHUTDOWN
 *   crash R   rank R kills itself (SIGKILL) after GO, in every incarnation;
 *             everyone else rejoins whenever the tracker says RESET and waits
 *             for the tracker's ABORT like a collective would, prints its
 *             sentence on stderr and exits 1
 *   report R  after GO, rank R reports an error the job cannot survive (an
 *             ERROR frame: what rally_abort and a failed collective send),
 *             "bad input line 7", and exits 1 once the ABORT came; the
 *             others wait for the ABORT like crash's survivors
 *   recover R MARKER HOW
 *             heartbeats every 100 ms; after GO, rank R fails once: when the
 *             file MARKER does not exist it creates it, then HOW: "kill"
 *             (prints "rank R dies now" without fflush, then SIGKILLs
 *             itself), "hang" (after 300 ms stops its heartbeats and
 *             sleeps), "killstop" (as kill; its next incarnation,
 *             finding MARKER but not MARKER.stop, creates that and stops
 *             itself with SIGSTOP right after its join, before its first
 *             heartbeat), or an exit status.
 *   chatty K MS
 *             after GO rank 0 PRINTs K lines of 100 bytes; then every rank
 *             waits MS ms (beating) and finishes like ok.  The others wait for the RESET, REJOIN at
 *             "version 3, seq 7", and every worker then says it is back in step
 *             (IN_STEP) and finishes like ok (printing "hello from rank
 *             R, epoch E, incarnation I")
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracker/client.h"
#include "tracker/proto.h"
#include "util/clock.h"

#define WAIT_MS 20000
/* docs/protocol.md: phase 2, version 3, q = 8 (user collective seq 7) */
#define POSITION ((UINT64_C(2) << 62) | (UINT64_C(3) << 32) | 8)

/* READY until GO, rejoining as often as the tracker resets. */
static int ready(struct rally__tclient *t, struct rally__err *e)
{
    for (;;) {
        rally__err_clear(e);
        int rc = rally__tclient_ready(t, rally__deadline(WAIT_MS), e);
        if (rc != RALLY__ERESET)
            return rc;
        rally__err_clear(e);
        if (rally__tclient_rejoin(t, POSITION, 3, rally__deadline(WAIT_MS), e) != RALLY_OK)
            return e->code;
    }
}

/* Waits on the alarm line: OK after a RESET was answered, else the error. */
static int await_reset(struct rally__tclient *t, struct rally__err *e)
{
    for (;;) {
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (poll(&p, 1, WAIT_MS) != 1)
            return rally__fail(e, RALLY_ETIMEDOUT, "no RESET or ABORT within %d ms", WAIT_MS);
        int rc = rally__tclient_check(t, e);
        if (rc == RALLY_OK)
            continue;
        if (rc != RALLY__ERESET)
            return rc;
        rally__err_clear(e);
        if (rally__tclient_rejoin(t, POSITION, 3, rally__deadline(WAIT_MS), e) != RALLY_OK)
            return e->code;
        return ready(t, e);
    }
}

int main(int argc, char **argv)
{
    const char *act = argc > 1 ? argv[1] : "ok";
    struct rally__tclient t;
    struct rally__err e = {0, ""};
    struct rally__tclient_opts o = {.tracker = getenv("RALLY_TRACKER"),
                                    .secret_file = getenv("RALLY_SECRET_FILE"),
                                    .task_id = getenv("RALLY_TASK_ID"),
                                    .listen_port = 1,
                                    .processor_name = "tworker",
                                    .connect_timeout_ms = WAIT_MS};
    int recover = strcmp(act, "recover") == 0 && argc > 4;
    if (o.tracker == NULL || o.secret_file == NULL) {
        fprintf(stderr, "tworker: no RALLY_TRACKER / RALLY_SECRET_FILE\n");
        return 2;
    }
    if (rally__tclient_join(&t, &o, &e) != RALLY_OK)
        goto fail;
    if (recover && t.rank == atoi(argv[2]) && strcmp(argv[4], "killstop") == 0 &&
        access(argv[3], F_OK) == 0) {
        char stop[4096];
        snprintf(stop, sizeof stop, "%s.stop", argv[3]);
        int fd = open(stop, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) { /* stopped before its first heartbeat */
            close(fd);
            kill(getpid(), SIGSTOP);
        }
    }
    if (rally__tclient_heartbeat_start(&t, 100, &e) != RALLY_OK || ready(&t, &e) != RALLY_OK)
        goto fail;
    if (strcmp(act, "crash") == 0) {
        if (argc > 2 && t.rank == atoi(argv[2]))
            kill(getpid(), SIGKILL);
        for (;;)
            if (await_reset(&t, &e) != RALLY_OK)
                goto fail;
    }
    if (strcmp(act, "report") == 0) {
        if (argc > 2 && t.rank == atoi(argv[2]))
            rally__tclient_report(&t, RALLY_EINVAL, "bad input line 7");
        for (;;)
            if (await_reset(&t, &e) != RALLY_OK)
                goto fail;
    }
    if (recover && t.rank == atoi(argv[2])) {
        int fd = open(argv[3], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) { /* the first incarnation fails */
            close(fd);
            if (strcmp(argv[4], "kill") == 0 || strcmp(argv[4], "killstop") == 0) {
                printf("rank %d dies now\n", t.rank); /* no fflush: a line printed is out */
                kill(getpid(), SIGKILL);
            }
            if (strcmp(argv[4], "hang") == 0) {
                rally__sleep_ms(300); /* the tracker counts silence after a first beat */
                rally__tclient_heartbeat_stop(&t);
                sleep(60);
            }
            rally__tclient_close(&t);
            return atoi(argv[4]);
        }
    } else if (recover && t.epoch == 0 && await_reset(&t, &e) != RALLY_OK) {
        goto fail;
    }
    if (strcmp(act, "chatty") == 0 && argc > 3) {
        char line[101];
        memset(line, 'x', sizeof line - 1);
        line[sizeof line - 1] = '\0';
        for (int i = 0; t.rank == 0 && i < atoi(argv[2]); i++)
            if (rally__tclient_print(&t, line, &e) != RALLY_OK)
                goto fail;
        rally__sleep_ms(atoi(argv[3]));
    }
    if (strcmp(act, "nofinal") == 0) {
        rally__tclient_close(&t); /* closes without SHUTDOWN */
        return 0;
    }
    if (recover && t.epoch > 1) /* back in step, as the library says it after a recovery */
        rally__tclient_in_step(&t);
    char msg[96];
    if (recover)
        snprintf(msg, sizeof msg, "hello from rank %d, epoch %u, incarnation %u", t.rank, t.epoch,
                 t.incarnation);
    else
        snprintf(msg, sizeof msg, "hello from rank %d", t.rank);
    if (rally__tclient_print(&t, msg, &e) != RALLY_OK ||
        rally__tclient_shutdown(&t, rally__deadline(WAIT_MS), &e) != RALLY_OK)
        goto fail;
    rally__tclient_close(&t);
    return 0;
fail:
    fprintf(stderr, "tworker: %s\n", e.msg);
    rally__tclient_close(&t);
    return 1;
}
