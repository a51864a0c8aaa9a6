/*
 * server.h — the tracker, as a non-blocking component for someone else's
 * poll loop.
 *
 * A launcher (tools/rally-run.c) or a standalone tool (tools/rally-tracker.c)
 * owns the loop; the tracker only says which descriptors it wants watched
 * and what its next deadline is:
 *
 *     for (;;) {
 *         size_t n = rally__tracker_fill(t, pfd, cap);   // + the caller's own fds
 *         poll(pfd, n + mine, min(rally__ms_left(rally__tracker_deadline(t)), ...));
 *         rally__tracker_handle(t, pfd, n);              // always, also on timeout
 *         if (rally__tracker_state(t, NULL, NULL) != RALLY__TRACKER_RUNNING) ...
 *     }
 *
 * Nothing here blocks: every socket is non-blocking, output waits in a queue
 * per connection, and each connection must finish its handshake and send
 * REGISTER within handshake_timeout_ms, so a silent or slow stranger costs
 * one descriptor for a while, never the job.  The protocol is in proto.h and
 * docs/protocol.md.  Single-threaded: call everything from the loop's thread.
 */
#ifndef RALLY_TRACKER_SERVER_H
#define RALLY_TRACKER_SERVER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"
#include "util/err.h"

struct rally__tracker;

/* What the tracker tells its owner, besides PRINT lines. */
enum {
    RALLY__TEV_LOG = 1,   /* text: a line for the operator (a dropped connection, ...) */
    RALLY__TEV_ASSIGNED,  /* rank, task_id: a worker got its rank */
    RALLY__TEV_GO,        /* every worker is ready; collectives may start */
    RALLY__TEV_FINALIZED, /* rank, task_id: the worker sent SHUTDOWN */
    RALLY__TEV_DONE,      /* every rank finalized */
    RALLY__TEV_FAILED     /* text: the job failed; ABORT went to every worker */
};

struct rally__tracker_event {
    int kind;
    int rank;            /* -1 when none */
    const char *task_id; /* "" when none */
    const char *text;    /* "" when none */
};

struct rally__tracker_opts {
    int world;                          /* 1..RALLY__WORLD_MAX workers */
    const char *host;                   /* bind address; "" or "*": every address */
    int port;                           /* 0: the kernel picks (see rally__tracker_port) */
    const struct rally__secret *secret; /* copied */
    int64_t startup_timeout_ms;         /* all REGISTER and READY by then; <= 0: none */
    int64_t handshake_timeout_ms;       /* per connection, up to REGISTER; 0: 10000 */
    /* Both may be NULL.  Called from inside rally__tracker_handle/abort. */
    void (*print)(void *arg, int rank, const char *msg);
    void (*event)(void *arg, const struct rally__tracker_event *ev);
    void *arg;
};

enum { RALLY__TRACKER_RUNNING = 0, RALLY__TRACKER_DONE = 1, RALLY__TRACKER_FAILED = 2 };

/* Binds and listens; does not block. */
int rally__tracker_new(struct rally__tracker **out, const struct rally__tracker_opts *o,
                       struct rally__err *e);
/* Closes every connection (nothing more is sent) and frees t (NULL is accepted). */
void rally__tracker_free(struct rally__tracker *t);

int rally__tracker_port(const struct rally__tracker *t);

/* How many pollfd slots rally__tracker_fill may need right now. */
size_t rally__tracker_npoll(const struct rally__tracker *t);
/* Writes up to cap entries to p and returns how many it wrote. */
size_t rally__tracker_fill(struct rally__tracker *t, struct pollfd *p, size_t cap);
/* Handles the revents of exactly the slice fill wrote (p, n), and every
 * deadline that has passed.  Call it after every poll, also on timeout. */
void rally__tracker_handle(struct rally__tracker *t, const struct pollfd *p, size_t n);
/* The earliest moment handle must run even without I/O (RALLY__NEVER: none). */
int64_t rally__tracker_deadline(const struct rally__tracker *t);

/* RALLY__TRACKER_RUNNING, _DONE or _FAILED.  When failed, *sentence (may be
 * NULL) gets why, and *rank (may be NULL) the rank whose connection dropped
 * without finalizing when that was the cause, else -1. */
int rally__tracker_state(const struct rally__tracker *t, const char **sentence, int *rank);

/* Fails the job (if it still runs): queues ABORT(code, sentence) to every
 * connected worker.  The frames leave on the next polls. */
void rally__tracker_abort(struct rally__tracker *t, int code, const char *fmt, ...)
    RALLY__PRINTF(3, 4);

/* 1 when no output waits in any queue (e.g. the last BYE or ABORT left). */
int rally__tracker_flushed(const struct rally__tracker *t);

#endif
