/*
 * serve.c — runs the poll loop around an embedded tracker and its owner's
 * descriptors and signals (serve.h).
 */
#include "serve.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/clock.h"

int rally__launch_signals(int children)
{
    sigset_t set;
    sigemptyset(&set);
    if (children) {
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGUSR1); /* rally-run: "snapshot now" */
    }
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP); /* a closed terminal or ssh session: stop as for SIGTERM */
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int rally__launch_tmpdir(const char *name, char *dir, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    return mkdtemp(dir) == NULL ? errno : 0;
}

int rally__launch_host_is_any(const char *host)
{
    return !*host || !strcmp(host, "*") || !strcmp(host, "0.0.0.0") || !strcmp(host, "::");
}

int rally__launch_tracker_new(struct rally__tracker **out, const struct rally__tracker_opts *o,
                              int recovery, int64_t heartbeat_ms, struct rally__err *e)
{
    struct rally__tracker *t;
    int rc = rally__tracker_new(&t, o, e);
    if (rc != RALLY_OK)
        return rc;
    rally__tracker_set_recovery(t, recovery);
    rally__tracker_set_heartbeat_timeout(t, heartbeat_ms);
    *out = t;
    return RALLY_OK;
}

int rally__launch_serve(struct rally__tracker *t, int sfd, const struct rally__launch_owner *o)
{
    struct pollfd *p = NULL;
    int rc = RALLY_OK;
    while (o->done == NULL || !o->done(o->arg)) {
        size_t want = 1 + o->nfds + rally__tracker_npoll(t);
        struct pollfd *np = realloc(p, want * sizeof *p);
        if (np == NULL) {
            rc = RALLY_ENOMEM;
            goto cleanup;
        }
        p = np;
        p[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        size_t n = 1 + (o->fill ? o->fill(o->arg, p + 1) : 0);
        size_t nt = rally__tracker_fill(t, p + n, want - n);
        int64_t deadline = rally__tracker_deadline(t);
        int64_t mine = o->deadline ? o->deadline(o->arg) : RALLY__NEVER;
        if (mine < deadline)
            deadline = mine;
        if (poll(p, n + nt, rally__ms_left(deadline)) < 0 && errno != EINTR) {
            rc = RALLY_ESYS;
            goto cleanup;
        }
        struct signalfd_siginfo si;
        if (p[0].revents)
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (o->signal)
                    o->signal(o->arg, (int)si.ssi_signo);
        if (o->handle)
            o->handle(o->arg, p + 1, n - 1);
        rally__tracker_handle(t, p + n, nt);
        if (o->after)
            o->after(o->arg);
        fflush(stdout);
        fflush(stderr);
    }
cleanup:;
    int saved = errno;
    free(p);
    errno = saved;
    return rc;
}
