/*
 * serve.h — the poll loop that serves an embedded tracker for rally-run and
 * rally-tracker, and the set-up both need before it.
 *
 * The loop owns one pollfd array: a signalfd first, then the owner's own
 * descriptors, then the tracker's (rally__tracker_fill).  Each turn it asks
 * the owner whether it is done, polls until the earliest of the tracker's
 * and the owner's deadlines, hands every signal that arrived and the owner's
 * revents to the owner, lets the tracker handle its slice, and then calls
 * the owner's after() — the one place where the owner looks at what the
 * tracker reported and decides — and flushes stdout and stderr.
 */
#ifndef RALLY_TOOLS_LAUNCH_SERVE_H
#define RALLY_TOOLS_LAUNCH_SERVE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "tracker/server.h"

/* Blocks SIGINT, SIGTERM, SIGHUP (and SIGCHLD, SIGUSR1 and SIGUSR2 when children) so that they arrive
 * only through the returned signalfd, and ignores SIGPIPE.  Returns the
 * descriptor, or -1 (errno says why). */
int rally__launch_signals(int children);

/* Creates a fresh 0700 directory $TMPDIR/<name>-NS-PID-START-XXXXXX (TMPDIR
 * unset or empty: /tmp; NS our pid namespace's inode number, PID and START
 * our pid and its start time in /proc/PID/stat) and writes its path to dir.
 * Returns 0 or errno; on failure dir holds the template.  First it sweeps
 * (rally__launch_tmpdir_sweep): a launcher killed by SIGKILL leaves its
 * directory behind, and the next one removes it. */
int rally__launch_tmpdir(const char *name, char *dir, size_t cap);
/* The same under the directory base. */
int rally__launch_tmpdir_in(const char *base, const char *name, char *dir, size_t cap);
/* Removes base's directories <name>-NS-PID-START-XXXXXX whose owner is
 * provably gone: NS is our pid namespace (a pid means the same process to
 * both), and /proc has no PID or its start time is not START (the pid was
 * reused); only directories of our own user that hold only files.  Anything
 * else — another user's, another namespace's, an older name without the
 * pid, a live owner, one we cannot read — stays. */
void rally__launch_tmpdir_sweep(const char *base, const char *name);

/* 1 when a bind address means every address ("", "*", "0.0.0.0", "::"):
 * the workers then need another name for the tracker. */
int rally__launch_host_is_any(const char *host);

/* rally__tracker_new, then recovery on or off and the heartbeat timeout. */
int rally__launch_tracker_new(struct rally__tracker **out, const struct rally__tracker_opts *o,
                              int recovery, int64_t heartbeat_ms, struct rally__err *e);

/* What the loop's owner adds.  Any hook may be NULL. */
struct rally__launch_owner {
    void *arg;
    size_t nfds;                                 /* at most this many descriptors of its own */
    int (*done)(void *arg);                      /* 1: leave the loop (asked before each poll) */
    size_t (*fill)(void *arg, struct pollfd *p); /* writes up to nfds, returns how many */
    int64_t (*deadline)(void *arg);              /* its next deadline (RALLY__NEVER: none) */
    void (*signal)(void *arg, int sig);          /* each signal read from the signalfd */
    void (*handle)(void *arg, const struct pollfd *p, size_t n); /* its slots after poll */
    void (*after)(void *arg); /* after rally__tracker_handle, every turn */
};

/* Serves t until o->done says so: RALLY_OK; or RALLY_ENOMEM, or RALLY_ESYS
 * when poll failed (errno says why). */
int rally__launch_serve(struct rally__tracker *t, int sfd, const struct rally__launch_owner *o);

#endif
