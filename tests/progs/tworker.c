/*
 * tworker.c — a worker that speaks the tracker protocol through the internal
 * client (src/tracker/client.h) instead of the public API, so the launcher
 * tests can finalize without the collective layer.  It reads the same
 * environment rally_init does.  argv[1]:
 *
 *   ok        join, ready, PRINT "hello from rank R", SHUTDOWN, exit 0
 *   nofinal   join, ready, exit 0 without SHUTDOWN
 *   crash R   rank R kills itself (SIGKILL) after GO; everyone else waits
 *             for the tracker's ABORT like a collective would, prints its
 *             sentence on stderr and exits 1
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracker/client.h"
#include "util/clock.h"

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
                                    .connect_timeout_ms = 20000};
    if (o.tracker == NULL || o.secret_file == NULL) {
        fprintf(stderr, "tworker: no RALLY_TRACKER / RALLY_SECRET_FILE\n");
        return 2;
    }
    if (rally__tclient_join(&t, &o, &e) != RALLY_OK ||
        rally__tclient_ready(&t, rally__deadline(20000), &e) != RALLY_OK)
        goto fail;
    if (strcmp(act, "crash") == 0) {
        if (argc > 2 && t.rank == atoi(argv[2]))
            kill(getpid(), SIGKILL);
        for (;;) {
            struct pollfd p = {.fd = t.fd, .events = POLLIN};
            if (poll(&p, 1, 20000) != 1) {
                fprintf(stderr, "tworker: no ABORT within 20 s\n");
                return 3;
            }
            if (rally__tclient_check(&t, &e) != RALLY_OK)
                goto fail;
        }
    }
    if (strcmp(act, "nofinal") == 0) {
        rally__tclient_close(&t); /* closes without SHUTDOWN */
        return 0;
    }
    char msg[64];
    snprintf(msg, sizeof msg, "hello from rank %d", t.rank);
    if (rally__tclient_print(&t, msg, &e) != RALLY_OK ||
        rally__tclient_shutdown(&t, rally__deadline(20000), &e) != RALLY_OK)
        goto fail;
    rally__tclient_close(&t);
    return 0;
fail:
    fprintf(stderr, "tworker: %s\n", e.msg);
    rally__tclient_close(&t);
    return 1;
}
