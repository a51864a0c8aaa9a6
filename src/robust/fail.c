/*
 * fail.c — a failure recovery cannot repair, told once: every file of the
 * robust engine calls down into it, and it calls nothing of theirs (only
 * the tracker client below), so a failure found anywhere fails the job the
 * same way: the tracker hears it, and this worker waits briefly for the
 * ABORT before its calls return.
 */
#include <stdarg.h>
#include <stdio.h>

#include "net/sock.h"
#include "robust/robust.h"
#include "util/clock.h"

int rally__robust_lost(struct rally__robust *rb, const char *fmt, ...)
{
    char msg[RALLY__ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rally__fail(rb->err, RALLY_EPEER, "%s", msg);
    rally__robust_fatal(rb, RALLY__ELOST, rb->err->msg);
    return RALLY_EPEER;
}

/* Waits for the ABORT so that the job is failed before this process can
 * exit — else the launcher could see an exit first and restart the worker. */
void rally__robust_fatal(struct rally__robust *rb, int code, const char *msg)
{
    rb->fatal = code == RALLY__ELOST ? RALLY_EPEER : code;
    if (!rb->distributed || rb->tc.fd < 0)
        return;
    rally__tclient_report(&rb->tc, code, msg);
    int64_t deadline = rally__deadline(5000);
    while (rally__fd_wait(rb->tc.fd, 0, deadline) > 0) {
        struct rally__err v = {0, ""};
        int rc = rally__tclient_check(&rb->tc, &v);
        if (rc != RALLY_OK && rc != RALLY__ERESET)
            return;
    }
}
